// Token and learned position embeddings, with dropout on their sum.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace fsdp {

struct EmbeddingWeights {
  const float* wte;  // [V, C]
  const float* wpe;  // [S, C]
};

struct EmbeddingGrads {
  float* wte;
  float* wpe;
};

/** out[B*T, C] = dropout(wte[tokens] + wpe[0..T)). */
void embedding_forward(Backend& be, float* out, const std::int32_t* tokens, const EmbeddingWeights& w, long B, long T, long C, float dropout,
                       std::uint64_t key);

/** Gradients of wte and wpe from dout (dout is overwritten by the dropout backward). */
void embedding_backward(Backend& be, const EmbeddingGrads& g, float* dout, const std::int32_t* tokens, long B, long T, long C, float dropout,
                        std::uint64_t key);

}  // namespace fsdp
