// Token and learned position embeddings, with dropout on their sum.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace fsdp {

/** In the backend's compute dtype. */
struct EmbeddingWeights {
  const void* wte;  // [V, C]
  const void* wpe;  // [S, C]
};

struct EmbeddingGrads {
  float* wte;
  float* wpe;
};

/** out[B*T, C] = dropout(wte[tokens] + wpe[0..T)); tokens in the backend's memory. */
void embedding_forward(Backend& be, void* out, const std::int32_t* tokens, const EmbeddingWeights& w, long B, long T,
                       long C, float dropout, std::uint64_t key);

/** Gradients of wte and wpe from dout (dout is overwritten by the dropout backward). */
void embedding_backward(Backend& be, const EmbeddingGrads& g, void* dout, const std::int32_t* tokens, long B, long T,
                        long C, float dropout, std::uint64_t key);

}  // namespace fsdp
