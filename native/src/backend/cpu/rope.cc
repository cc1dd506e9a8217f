// Rotary position embedding (transformers' apply_rotary_pos_emb with rotate_half): in each q and
// k head, the pair (j, j + D/2) turns by the angle t · inv_freq[j]. The angle is rounded to
// float32 as transformers forms it (inv_freq ⊗ positions in float32) and its cosine and sine are
// then taken in double and rounded once, so the tables match torch's to an ulp. v is untouched.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

namespace {

/** Turns the q and k heads of qkv[B*T, (H + 2 KV) D] by sign · t · inv_freq (sign -1: the transpose). */
void rotate(float* qkv, const float* inv_freq, long B, long T, long H, long KV, long D, float sign, const char* op) {
  if (D % 2 != 0)
    throw std::invalid_argument(std::string("cpu backend: ") + op + ": head_dim " + std::to_string(D) +
                                " is odd; rotary embedding pairs (j, j + D/2)");
  const long half = D / 2, W = (H + 2 * KV) * D, heads = H + KV;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < T; ++t) {
    std::vector<float> cs(half), sn(half);
    for (long j = 0; j < half; ++j) {
      const float angle = static_cast<float>(t) * inv_freq[j];
      cs[j] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sn[j] = sign * static_cast<float>(std::sin(static_cast<double>(angle)));
    }
    for (long b = 0; b < B; ++b) {
      float* row = qkv + (b * T + t) * W;
      for (long h = 0; h < heads; ++h) {
        float* x = row + h * D;
#pragma omp simd
        for (long j = 0; j < half; ++j) {
          const float x1 = x[j], x2 = x[j + half];
          x[j] = x1 * cs[j] - x2 * sn[j];
          x[j + half] = x2 * cs[j] + x1 * sn[j];
        }
      }
    }
  }
}

}  // namespace

void CpuBackend::rope_forward(void* qkv, const float* inv_freq, long B, long T, long H, long KV, long D) {
  rotate(static_cast<float*>(qkv), inv_freq, B, T, H, KV, D, 1.0f, "rope_forward");
}

void CpuBackend::rope_backward(void* dqkv, const float* inv_freq, long B, long T, long H, long KV, long D) {
  rotate(static_cast<float*>(dqkv), inv_freq, B, T, H, KV, D, -1.0f, "rope_backward");
}

}  // namespace fsdp
