// The float instantiations of the CUDA softmax kernel family (see softmax_kernels.cuh).
#include "ep/primitive/softmax_kernels.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

template std::unique_ptr<Softmax> NewSoftmax<float>();
template std::unique_ptr<LogSoftmax> NewLogSoftmax<float>();

}  // namespace oneflite::ep::primitive::cuda_softmax
