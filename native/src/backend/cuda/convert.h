// Conversions to float32 on the GPU (convert.cu): gradients reduced in a 16-bit reduce_dtype come
// back to the float32 gradients here. The other direction is kernels.h's cast_from_f32.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "backend/backend.h"

namespace fsdp::cuda {

/** dst[n] (float32) = src[n] in t. Either side may be pinned host memory (reached through unified addressing). */
void to_f32(float* dst, const void* src, DType t, std::size_t n, cudaStream_t s);

}  // namespace fsdp::cuda
