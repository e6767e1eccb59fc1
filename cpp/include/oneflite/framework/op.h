// The op layer: op definitions, and the OpExprs functors build from them.
//
// An OpDef is registered once by name: its named inputs and outputs, its attributes, and the
// functions that infer each output's dtype, shape and device from the inputs. An OpExpr is a
// handle a functor builds once (OpBuilder("softmax").Input("in").Output("out").Build()) and then
// hands to the interpreter on every call; it also caches the kernels chosen for it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "oneflite/common/data_type.h"
#include "oneflite/common/device.h"
#include "oneflite/framework/attr_map.h"
#include "oneflite/framework/tensor.h"

namespace oneflite {

// What is known about a tensor before it exists.
struct TensorMeta {
  Shape shape;
  DataType dtype = DataType::kFloat32;
  Device device;
};

// What an inference function sees: the inputs' metadata and the attributes. It fills the
// outputs, which start as copies of input 0's metadata (so a same-shape op writes nothing).
class InferContext {
 public:
  InferContext(const std::vector<TensorMeta>* inputs, std::vector<TensorMeta>* outputs,
               const AttrMap* attrs)
      : inputs_(inputs), outputs_(outputs), attrs_(attrs) {}
  const TensorMeta& input(size_t i) const { return inputs_->at(i); }
  TensorMeta& output(size_t i) { return outputs_->at(i); }
  const AttrMap& attrs() const { return *attrs_; }

 private:
  const std::vector<TensorMeta>* inputs_;
  std::vector<TensorMeta>* outputs_;
  const AttrMap* attrs_;
};

using InferFn = std::function<void(InferContext* ctx)>;

struct OpDef {
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attrs;
  InferFn infer_dtype;   // optional: outputs keep input 0's dtype
  InferFn infer_shape;   // optional: outputs keep input 0's shape
  InferFn infer_device;  // optional: outputs live on input 0's device
  std::string doc;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  // Throws ValueError if an op of that name exists.
  void Register(OpDef def);
  // nullptr if unknown.
  const OpDef* Find(const std::string& name) const;
  std::vector<const OpDef*> List() const;

 private:
  OpRegistry() = default;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<OpDef>> defs_;
};

// Fluent registration: ONEFLITE_REGISTER_OP("softmax").Input("in").Output("out")...;
class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name) { def_.name = std::move(name); }
  OpDefBuilder& Input(std::string name);
  OpDefBuilder& Output(std::string name);
  OpDefBuilder& Attr(std::string name);
  OpDefBuilder& SetDataTypeInferFn(InferFn fn);
  OpDefBuilder& SetShapeInferFn(InferFn fn);
  OpDefBuilder& SetDeviceInferFn(InferFn fn);
  OpDefBuilder& SetDoc(std::string doc);
  OpDef Finish() && { return std::move(def_); }

 private:
  OpDef def_;
};

struct OpRegistrar {
  OpRegistrar(OpDefBuilder& builder);  // NOLINT(google-explicit-constructor): macro sugar
};

class OpKernel;

class OpExpr {
 public:
  OpExpr(const OpDef* def, std::vector<std::string> inputs, std::vector<std::string> outputs)
      : def_(def), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

  const std::string& op_type_name() const { return def_->name; }
  const OpDef& def() const { return *def_; }
  size_t input_size() const { return inputs_.size(); }
  size_t output_size() const { return outputs_.size(); }

  // The kernel the interpreter picked for (device type, dtype), cached here until a kernel or
  // primitive registry changes. Thread-safe.
  struct CachedKernel {
    std::shared_ptr<const OpKernel> kernel;
    std::string kernel_name;
    int priority = 0;
    std::string match_doc;
  };
  CachedKernel GetOrCreateKernel(DeviceType device_type, DataType dtype) const;

 private:
  const OpDef* def_;
  std::vector<std::string> inputs_;
  std::vector<std::string> outputs_;

  mutable std::mutex cache_mutex_;
  // (kernel registry, primitive registry) generations the cache was filled under.
  mutable std::pair<uint64_t, uint64_t> cache_generation_{~0ull, ~0ull};
  mutable std::map<std::pair<DeviceType, DataType>, CachedKernel> kernel_cache_;
};

// OpBuilder("softmax").Input("in").Output("out").Build(): checks the names against the
// registered OpDef and yields the OpExpr. Throws ValueError on an unknown op or a mismatch.
class OpBuilder {
 public:
  explicit OpBuilder(std::string op_type_name) : op_type_name_(std::move(op_type_name)) {}
  OpBuilder& Input(std::string name) {
    inputs_.push_back(std::move(name));
    return *this;
  }
  OpBuilder& Output(std::string name) {
    outputs_.push_back(std::move(name));
    return *this;
  }
  std::shared_ptr<OpExpr> Build() const;

 private:
  std::string op_type_name_;
  std::vector<std::string> inputs_;
  std::vector<std::string> outputs_;
};

}  // namespace oneflite

#define ONEFLITE_OP_CONCAT_INNER(a, b) a##b
#define ONEFLITE_OP_CONCAT(a, b) ONEFLITE_OP_CONCAT_INNER(a, b)
#define ONEFLITE_REGISTER_OP(name)                                          \
  [[maybe_unused]] static const ::oneflite::OpRegistrar ONEFLITE_OP_CONCAT( \
      oneflite_op_registrar_, __LINE__) = ::oneflite::OpDefBuilder(name)
