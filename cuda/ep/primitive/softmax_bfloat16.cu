// The bfloat16 instantiations of the CUDA softmax kernel family (see softmax_kernels.cuh).
#include "ep/primitive/softmax_kernels.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

template std::unique_ptr<Softmax> NewSoftmax<__nv_bfloat16>();
template std::unique_ptr<LogSoftmax> NewLogSoftmax<__nv_bfloat16>();

}  // namespace oneflite::ep::primitive::cuda_softmax
