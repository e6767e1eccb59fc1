// The element types the CUDA primitives visit dtypes with (VisitDataType,
// VisitFloatingDataType): oneflite::float16 and bfloat16 share their bits with CUDA's __half and
// __nv_bfloat16, so the primitives reinterpret the tensors' pointers as those.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "oneflite/common/data_type_dispatch.h"

namespace oneflite::ep {

using CudaElementTypes = ElementTypes<__half, __nv_bfloat16>;

}  // namespace oneflite::ep
