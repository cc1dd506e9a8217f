#include "model/embedding.h"

namespace fsdp {

void embedding_forward(Backend& be, void* out, const std::int32_t* tokens, const EmbeddingWeights& w, long B, long T,
                       long C, float dropout, std::uint64_t key) {
  be.embedding_forward(out, tokens, w.wte, w.wpe, B, T, C);
  if (dropout > 0) be.dropout(out, out, static_cast<std::size_t>(B * T * C), dropout, key);
}

void embedding_backward(Backend& be, const EmbeddingGrads& g, void* dout, const std::int32_t* tokens, long B, long T,
                        long C, float dropout, std::uint64_t key) {
  if (dropout > 0) be.dropout(dout, dout, static_cast<std::size_t>(B * T * C), dropout, key);
  be.embedding_backward(g.wte, g.wpe, dout, tokens, B, T, C);
}

}  // namespace fsdp
