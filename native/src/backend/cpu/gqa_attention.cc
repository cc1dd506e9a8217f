// Causal grouped-query attention over packed qkv[B*T, (H + 2 KV) D] = q (H heads) | k (KV) | v
// (KV): query head h reads kv head h / (H / KV); D is the head_dim (not C / H: Qwen3 decouples it).
// Multi-head attention is the case KV = H, multi-query KV = 1.
//
// As attention.cc: each (batch, query head) pair is a few small OpenBLAS products, the causal
// mask applied by the softmax (exact zeros above the diagonal), and the probabilities [B, H, T, T]
// kept for backward. Unlike it, the products go by tiles of kQueryTile queries, each reading only
// the keys up to its last query: the masked triangle is not computed (at T = 512, 56% of the
// square's work). A kv head's gradient is the sum over the query heads of its group: threads own
// (batch, kv head) pairs for it and add heads and tiles in a fixed order, so every result has a
// fixed order whatever the thread count.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/small_gemm.h"
#include "backend/cpu/softmax_row.h"

namespace fsdp {

namespace {

/** Queries per tile: tile [t0, t1) reads keys [0, t1). */
constexpr long kQueryTile = 64;

/** Where the heads of one sequence live in packed qkv and in y. */
struct Heads {
  long T, H, KV, D;
  long width() const { return (H + 2 * KV) * D; }  // a qkv row
  long group() const { return H / KV; }            // query heads per kv head
  long q(long b, long h) const { return b * T * width() + h * D; }
  long k(long b, long g) const { return b * T * width() + (H + g) * D; }
  long v(long b, long g) const { return b * T * width() + (H + KV + g) * D; }
  long y(long b, long h) const { return b * T * H * D + h * D; }
  long probs(long b, long h) const { return (b * H + h) * T * T; }
  long tiles() const { return (T + kQueryTile - 1) / kQueryTile; }
};

/** Query tile i: [t0, t1). */
struct Tile {
  long t0, t1;
  Tile(long i, long T) : t0(i * kQueryTile), t1(std::min(T, (i + 1) * kQueryTile)) {}
  long rows() const { return t1 - t0; }
};

void check_heads(long H, long KV, const char* op) {
  if (KV <= 0 || H % KV != 0)
    throw std::invalid_argument(std::string("cpu backend: ") + op + ": " + std::to_string(H) +
                                " query heads are not a multiple of " + std::to_string(KV) + " key-value heads");
}

/** probs[B, H, T, T] = softmax(q k^T / sqrt(D)) over the positions up to each query (zero above). */
void probabilities(bool bf16, float* probs, const float* qkv, const Heads& s, long B) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.D));
  const long T = s.T, W = s.width();
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < s.H; ++h) {
      float* p = probs + s.probs(b, h);
      for (long i = 0; i < s.tiles(); ++i) {
        const Tile tile(i, T);
        small_gemm(bf16, false, true, tile.rows(), tile.t1, s.D, scale, qkv + s.q(b, h) + tile.t0 * W, W,
                   qkv + s.k(b, h / s.group()), W, 0.0f, p + tile.t0 * T, T);
        for (long t = tile.t0; t < tile.t1; ++t) {
          float* row = p + t * T;
          softmax_in_place(row, t + 1);
          for (long u = t + 1; u < T; ++u) row[u] = 0.0f;
        }
      }
    }
  }
}

}  // namespace

std::size_t CpuBackend::gqa_attention_state_size(long B, long T, long H, long /*KV*/, long /*D*/) const {
  return static_cast<std::size_t>(B * H * T * T);
}
std::size_t CpuBackend::gqa_attention_scratch_size(long B, long T, long H, long /*KV*/, long /*D*/) const {
  return static_cast<std::size_t>(B * H * T * T);
}

void CpuBackend::gqa_attention_forward(void* y, float* probs, const void* qkv, long B, long T, long H, long KV, long D,
                                       AttentionTap* tap) {
  check_heads(H, KV, "gqa_attention_forward");
  const Heads s{T, H, KV, D};
  const float* in = static_cast<const float*>(qkv);
  float* out = static_cast<float*>(y);
  probabilities(bf16_gemm_, probs, in, s, B);
  if (tap) tap->softmax_state(probs, gqa_attention_state_size(B, T, H, KV, D));
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      for (long i = 0; i < s.tiles(); ++i) {
        const Tile tile(i, T);
        small_gemm(bf16_gemm_, false, false, tile.rows(), D, tile.t1, 1.0f, probs + s.probs(b, h) + tile.t0 * T, T,
                   in + s.v(b, h / s.group()), s.width(), 0.0f, out + s.y(b, h) + tile.t0 * H * D, H * D);
      }
    }
  }
}

void CpuBackend::gqa_attention_state(float* probs, const void* qkv, long B, long T, long H, long KV, long D) {
  check_heads(H, KV, "gqa_attention_state");
  probabilities(bf16_gemm_, probs, static_cast<const float*>(qkv), Heads{T, H, KV, D}, B);
}

void CpuBackend::gqa_attention_backward(void* dqkv, float* dprobs, const void* dy, const void* qkv, const void* /*y*/,
                                        const float* probs, long B, long T, long H, long KV, long D,
                                        AttentionTap* tap) {
  check_heads(H, KV, "gqa_attention_backward");
  const Heads s{T, H, KV, D};
  const long W = s.width(), Y = H * D, G = s.group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float* in = static_cast<const float*>(qkv);
  const float* d = static_cast<const float*>(dy);
  float* dx = static_cast<float*>(dqkv);
  // dprobs = dy v^T per query head, zero above each tile's keys (the tap reads it whole).
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      float* dp = dprobs + s.probs(b, h);
      for (long i = 0; i < s.tiles(); ++i) {
        const Tile tile(i, T);
        small_gemm(bf16_gemm_, false, true, tile.rows(), tile.t1, D, 1.0f, d + s.y(b, h) + tile.t0 * Y, Y,
                   in + s.v(b, h / G), W, 0.0f, dp + tile.t0 * T, T);
        for (long t = tile.t0; t < tile.t1; ++t)
          for (long u = tile.t1; u < T; ++u) dp[t * T + u] = 0.0f;
      }
    }
  }
  // dv = sum over the group and the tiles of probs^T dy; the last tile, which reaches every key,
  // of the group's first head writes, the rest add.
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long g = 0; g < KV; ++g) {
      for (long h = g * G; h < (g + 1) * G; ++h) {
        for (long i = s.tiles() - 1; i >= 0; --i) {
          const Tile tile(i, T);
          const bool first = h == g * G && i == s.tiles() - 1;
          small_gemm(bf16_gemm_, true, false, tile.t1, D, tile.rows(), 1.0f, probs + s.probs(b, h) + tile.t0 * T, T,
                     d + s.y(b, h) + tile.t0 * Y, Y, first ? 0.0f : 1.0f, dx + s.v(b, g), W);
        }
      }
    }
  }
  if (tap) tap->softmax_grad(dprobs, gqa_attention_scratch_size(B, T, H, KV, D));
    // Softmax backward in place, dscore = p (dp - sum_u p_u dp_u), zero above the diagonal; then
    // through q k^T / sqrt(D): dq = dscore k / sqrt(D).
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      const float* p = probs + s.probs(b, h);
      float* ds = dprobs + s.probs(b, h);
      for (long t = 0; t < T; ++t) {
        const float* pr = p + t * T;
        float* dr = ds + t * T;
        const long n = t + 1;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (long u = 0; u < n; ++u) dot += pr[u] * dr[u];
#pragma omp simd
        for (long u = 0; u < n; ++u) dr[u] = pr[u] * (dr[u] - dot);
        for (long u = n; u < T; ++u) dr[u] = 0.0f;
      }
      for (long i = 0; i < s.tiles(); ++i) {
        const Tile tile(i, T);
        small_gemm(bf16_gemm_, false, false, tile.rows(), D, tile.t1, scale, ds + tile.t0 * T, T, in + s.k(b, h / G), W,
                   0.0f, dx + s.q(b, h) + tile.t0 * W, W);
      }
    }
  }
  // dk = sum over the group and the tiles of dscore^T q / sqrt(D), in dv's order.
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long g = 0; g < KV; ++g) {
      for (long h = g * G; h < (g + 1) * G; ++h) {
        for (long i = s.tiles() - 1; i >= 0; --i) {
          const Tile tile(i, T);
          const bool first = h == g * G && i == s.tiles() - 1;
          small_gemm(bf16_gemm_, true, false, tile.t1, D, tile.rows(), scale, dprobs + s.probs(b, h) + tile.t0 * T, T,
                     in + s.q(b, h) + tile.t0 * W, W, first ? 0.0f : 1.0f, dx + s.k(b, g), W);
        }
      }
    }
  }
}

}  // namespace fsdp
