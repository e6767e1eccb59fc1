// The CUDA backend of the "softmax" and "log_softmax" primitives: the factories and their
// registration. The kernels are in softmax_kernels.cuh, instantiated one dtype per file
// (softmax_float.cu, softmax_half.cu, ...) so that the dtypes compile in parallel; the planner's
// caches are in softmax_plan.cu.
#include "ep/cuda_element_types.h"
#include "ep/primitive/softmax_kernels.cuh"

namespace oneflite::ep::primitive {

namespace {

class CudaSoftmaxFactory final : public SoftmaxFactory {
 public:
  std::unique_ptr<Softmax> New(DataType dtype) override {
    return VisitFloatingDataType<CudaElementTypes>(
        dtype, [](auto tag) { return cuda_softmax::NewSoftmax<decltype(tag)>(); });
  }
};

class CudaLogSoftmaxFactory final : public LogSoftmaxFactory {
 public:
  std::unique_ptr<LogSoftmax> New(DataType dtype) override {
    return VisitFloatingDataType<CudaElementTypes>(
        dtype, [](auto tag) { return cuda_softmax::NewLogSoftmax<decltype(tag)>(); });
  }
};

ONEFLITE_REGISTER_PRIMITIVE(SoftmaxFactory, DeviceType::kCUDA, "cuda", 100, CudaSoftmaxFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64);
ONEFLITE_REGISTER_PRIMITIVE(LogSoftmaxFactory, DeviceType::kCUDA, "cuda", 100,
                            CudaLogSoftmaxFactory, DataType::kFloat16, DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64);

}  // namespace

}  // namespace oneflite::ep::primitive
