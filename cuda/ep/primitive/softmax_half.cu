// The half instantiations of the CUDA softmax kernel family (see softmax_kernels.cuh).
#include "ep/primitive/softmax_kernels.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

template std::unique_ptr<Softmax> NewSoftmax<__half>();
template std::unique_ptr<LogSoftmax> NewLogSoftmax<__half>();

}  // namespace oneflite::ep::primitive::cuda_softmax
