// Softmax cross-entropy over the vocabulary, in place on the logits buffer (as llm.c): forward
// turns logits into probabilities, backward turns those into the logits' gradient.
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/softmax_row.h"

namespace fsdp {

void CpuBackend::softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    float* row = logits + i * V;
    const float target_logit = row[targets[i]];
    // log-sum-exp minus the target's logit: finite even where its probability underflows.
    losses[i] = softmax_in_place(row, V) - target_logit;
  }
}

void CpuBackend::softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    float* row = probs + i * V;
#pragma omp simd
    for (long v = 0; v < V; ++v) row[v] *= scale;
    row[targets[i]] -= scale;
  }
}

}  // namespace fsdp
