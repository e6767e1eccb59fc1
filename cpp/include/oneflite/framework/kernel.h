// The kernel layer: the code that runs an op on one device for one dtype.
//
// Kernels are registered per op name with a match rule on (device type, dtype) and a priority.
// The interpreter picks the highest-priority kernel whose rule matches, constructs it once for
// that (device type, dtype), caches it in the OpExpr, and calls Compute on every run.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oneflite/common/data_type.h"
#include "oneflite/common/device.h"
#include "oneflite/ep/stream.h"
#include "oneflite/framework/attr_map.h"
#include "oneflite/framework/tensor.h"

namespace oneflite {

// What a match rule and a kernel's constructor see.
struct KernelMatchContext {
  DeviceType device_type;
  DataType dtype;  // of input 0
};

// What Compute sees: allocated outputs, the inputs, the attributes and the stream.
class KernelComputeContext {
 public:
  KernelComputeContext(ep::Stream* stream, const TensorTuple* inputs, const TensorTuple* outputs,
                       const AttrMap* attrs)
      : stream_(stream), inputs_(inputs), outputs_(outputs), attrs_(attrs) {}
  ep::Stream* stream() const { return stream_; }
  const Tensor& input(size_t i) const { return inputs_->at(i); }
  const Tensor& output(size_t i) const { return outputs_->at(i); }
  const AttrMap& attrs() const { return *attrs_; }

 private:
  ep::Stream* stream_;
  const TensorTuple* inputs_;
  const TensorTuple* outputs_;
  const AttrMap* attrs_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void Compute(KernelComputeContext* ctx) const = 0;
  // One line for traces: what this kernel will do with these tensors (the primitive it
  // launches and how). Called only while tracing.
  virtual std::string Describe(const KernelComputeContext& ctx) const { return ""; }
};

using KernelMatchFn = std::function<bool(const KernelMatchContext&)>;
using KernelCreateFn = std::function<std::unique_ptr<OpKernel>(const KernelMatchContext&)>;

struct KernelRegistration {
  std::string op_name;
  std::string kernel_name;
  int priority = 0;
  KernelMatchFn match;
  std::string match_doc;  // the rule in words, for listings and traces
  KernelCreateFn create;
};

class KernelRegistry {
 public:
  static KernelRegistry& Global();
  void Register(KernelRegistration registration);
  // The highest-priority registration for `op_name` that matches; nullptr when none does.
  const KernelRegistration* Find(const std::string& op_name, const KernelMatchContext& ctx) const;
  std::vector<const KernelRegistration*> List() const;
  uint64_t generation() const;

 private:
  KernelRegistry() = default;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<KernelRegistration>> registrations_;
  uint64_t generation_ = 0;
};

// Fluent registration:
//   ONEFLITE_REGISTER_KERNEL("softmax", SoftmaxKernel).SetMatch(rule, "doc").SetPriority(0);
// Kernel must be constructible from a KernelMatchContext.
class KernelRegistrationBuilder {
 public:
  KernelRegistrationBuilder(std::string op_name, std::string kernel_name, KernelCreateFn create);
  KernelRegistrationBuilder& SetMatch(KernelMatchFn match, std::string doc);
  KernelRegistrationBuilder& SetPriority(int priority);
  KernelRegistration Finish() && { return std::move(registration_); }

 private:
  KernelRegistration registration_;
};

struct KernelRegistrar {
  KernelRegistrar(KernelRegistrationBuilder& builder);  // NOLINT: macro sugar
};

}  // namespace oneflite

#define ONEFLITE_KERNEL_CONCAT_INNER(a, b) a##b
#define ONEFLITE_KERNEL_CONCAT(a, b) ONEFLITE_KERNEL_CONCAT_INNER(a, b)
#define ONEFLITE_REGISTER_KERNEL(op_name, KernelClass)                              \
  [[maybe_unused]] static const ::oneflite::KernelRegistrar ONEFLITE_KERNEL_CONCAT( \
      oneflite_kernel_registrar_, __LINE__) =                                       \
      ::oneflite::KernelRegistrationBuilder(                                        \
          op_name, #KernelClass, [](const ::oneflite::KernelMatchContext& ctx) {    \
            return std::unique_ptr<::oneflite::OpKernel>(new KernelClass(ctx));     \
          })
