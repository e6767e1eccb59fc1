#include "oneflite/framework/op.h"

#include "oneflite/common/error.h"
#include "oneflite/ep/primitive/primitive.h"
#include "oneflite/framework/kernel.h"

namespace oneflite {

OpRegistry& OpRegistry::Global() {
  static auto* registry = new OpRegistry();
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  std::lock_guard<std::mutex> lock(mutex_);
  ONEFLITE_CHECK(defs_.count(def.name) == 0, ValueError, "op '", def.name,
                 "' is already registered");
  const std::string name = def.name;
  defs_.emplace(name, std::make_unique<OpDef>(std::move(def)));
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = defs_.find(name);
  return it == defs_.end() ? nullptr : it->second.get();
}

std::vector<const OpDef*> OpRegistry::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const OpDef*> defs;
  for (const auto& [name, def] : defs_) { defs.push_back(def.get()); }
  return defs;
}

OpDefBuilder& OpDefBuilder::Input(std::string name) {
  def_.inputs.push_back(std::move(name));
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string name) {
  def_.outputs.push_back(std::move(name));
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name) {
  def_.attrs.push_back(std::move(name));
  return *this;
}
OpDefBuilder& OpDefBuilder::SetDataTypeInferFn(InferFn fn) {
  def_.infer_dtype = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeInferFn(InferFn fn) {
  def_.infer_shape = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetDeviceInferFn(InferFn fn) {
  def_.infer_device = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetDoc(std::string doc) {
  def_.doc = std::move(doc);
  return *this;
}

OpRegistrar::OpRegistrar(OpDefBuilder& builder) {
  OpRegistry::Global().Register(std::move(builder).Finish());
}

std::shared_ptr<OpExpr> OpBuilder::Build() const {
  const OpDef* def = OpRegistry::Global().Find(op_type_name_);
  ONEFLITE_CHECK(def != nullptr, ValueError, "no op named '", op_type_name_, "' is registered");
  ONEFLITE_CHECK(inputs_ == def->inputs, ValueError, "op '", op_type_name_, "' takes ",
                 def->inputs.size(), " input(s) with other names than the OpBuilder gave");
  ONEFLITE_CHECK(outputs_ == def->outputs, ValueError, "op '", op_type_name_, "' has ",
                 def->outputs.size(), " output(s) with other names than the OpBuilder gave");
  return std::make_shared<OpExpr>(def, inputs_, outputs_);
}

OpExpr::CachedKernel OpExpr::GetOrCreateKernel(DeviceType device_type, DataType dtype) const {
  // A registration anywhere below may change which kernel or primitive should serve this call,
  // so the cache is keyed on both registries' generations.
  const std::pair<uint64_t, uint64_t> generation{
      KernelRegistry::Global().generation(),
      ep::primitive::PrimitiveRegistry::Global().generation()};
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (generation != cache_generation_) {
    kernel_cache_.clear();
    cache_generation_ = generation;
  }
  auto it = kernel_cache_.find({device_type, dtype});
  if (it != kernel_cache_.end()) { return it->second; }

  const KernelMatchContext match{device_type, dtype};
  const KernelRegistration* registration = KernelRegistry::Global().Find(def_->name, match);
  if (registration == nullptr) {
    const std::string forced = ep::primitive::PrimitiveRegistry::Global().DescribeForced();
    ONEFLITE_THROW(
        NotImplementedError, "'", def_->name, "' is not implemented for device '",
        NameOf(device_type), "' and dtype ", NameOf(dtype),
        ": no registered kernel or primitive serves that combination",
        forced.empty() ? "" : " (primitive backends forced, with no fallback: " + forced + ")");
  }
  CachedKernel cached{std::shared_ptr<const OpKernel>(registration->create(match)),
                      registration->kernel_name, registration->priority, registration->match_doc};
  kernel_cache_.emplace(std::make_pair(device_type, dtype), cached);
  return cached;
}

}  // namespace oneflite
