#include "oneflite/framework/interpreter.h"

#include "oneflite/common/error.h"
#include "oneflite/ep/device_manager.h"
#include "oneflite/framework/kernel.h"
#include "oneflite/framework/trace.h"

namespace oneflite {

namespace {

std::string DescribeMeta(const TensorMeta& meta) {
  return ShapeToString(meta.shape) + " " + NameOf(meta.dtype) + " on " + meta.device.ToString();
}

// "softmax: in (3, 2) float32 on cpu -> out (3, 2) float32 on cpu"
std::string DescribeCall(const OpDef& def, const std::vector<TensorMeta>& inputs,
                         const std::vector<TensorMeta>& outputs) {
  std::string text = def.name + ":";
  for (size_t i = 0; i < inputs.size(); ++i) {
    text += (i ? ", " : " ") + def.inputs[i] + " " + DescribeMeta(inputs[i]);
  }
  text += " ->";
  for (size_t i = 0; i < outputs.size(); ++i) {
    text += (i ? ", " : " ") + def.outputs[i] + " " + DescribeMeta(outputs[i]) + " (inferred)";
  }
  return text;
}

}  // namespace

TensorTuple Interpret(const OpExpr& op, const TensorTuple& inputs, const AttrMap& attrs) {
  const OpDef& def = op.def();
  ONEFLITE_CHECK(inputs.size() == op.input_size() && !inputs.empty(), ValueError, "op '", def.name,
                 "' takes ", op.input_size(), " input(s), got ", inputs.size());
  const Device device = inputs[0].device();
  std::vector<TensorMeta> input_metas;
  input_metas.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    ONEFLITE_CHECK(input.defined(), ValueError, "op '", def.name, "' got an undefined tensor");
    ONEFLITE_CHECK(input.device() == device, ValueError, "op '", def.name,
                   "' expects all tensors on one device, got '", device.ToString(), "' and '",
                   input.device().ToString(), "'");
    input_metas.push_back(TensorMeta{input.shape(), input.dtype(), input.device()});
  }

  // 1. Infer. Outputs start as copies of input 0 and each function edits what it changes.
  std::vector<TensorMeta> output_metas(op.output_size(), input_metas[0]);
  InferContext infer_ctx(&input_metas, &output_metas, &attrs);
  if (def.infer_dtype) { def.infer_dtype(&infer_ctx); }
  if (def.infer_shape) { def.infer_shape(&infer_ctx); }
  if (def.infer_device) { def.infer_device(&infer_ctx); }

  ONEFLITE_TRACE_SCOPE(trace_scope, "op", DescribeCall(def, input_metas, output_metas));

  // 2. Allocate.
  TensorTuple outputs;
  outputs.reserve(output_metas.size());
  for (const TensorMeta& meta : output_metas) {
    outputs.push_back(Tensor::Empty(meta.shape, meta.dtype, meta.device));
  }

  // 3. Find the kernel, keyed on where the inputs live: a kernel that moves data between
  // devices (copy) runs on the input's side.
  const OpExpr::CachedKernel kernel = op.GetOrCreateKernel(device.type, inputs[0].dtype());

  // 4. Compute.
  ep::DeviceManager* manager = ep::GetDeviceManager(device);
  manager->SetActiveDevice(device.index);
  KernelComputeContext compute_ctx(manager->GetStream(device.index), &inputs, &outputs, &attrs);
  if (trace::IsEnabled()) {
    trace::Record("kernel", kernel.kernel_name + " (priority " + std::to_string(kernel.priority) +
                                "; matched because " + kernel.match_doc + ")");
    trace::Record("primitive", kernel.kernel->Describe(compute_ctx));
  }
  kernel.kernel->Compute(&compute_ctx);
  return outputs;
}

}  // namespace oneflite
