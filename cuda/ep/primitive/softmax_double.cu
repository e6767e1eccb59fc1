// The double instantiations of the CUDA softmax kernel family (see softmax_kernels.cuh).
#include "ep/primitive/softmax_kernels.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

template std::unique_ptr<Softmax> NewSoftmax<double>();
template std::unique_ptr<LogSoftmax> NewLogSoftmax<double>();

}  // namespace oneflite::ep::primitive::cuda_softmax
