// Causal attention forward on tensor cores (FlashAttention-2), bfloat16 and float16 with float32
// accumulation. A block of 4 warps owns a tile of 64 queries (16 rows a warp, the mma's M) and
// streams the key and value tiles up to the diagonal through shared memory, double-buffered with
// cp.async: S = Q K^T in registers, the online softmax per row (flash_tiling.h), P rounded to the
// compute dtype and multiplied by V without leaving registers (mma.cuh). Only each row's
// log-sum-exp is kept for backward. Query tiles are scheduled longest first (the causal triangle).
//
// Modes, as the float32 kernels in attention.cu: y null computes the log-sum-exp only (selective
// checkpointing's recompute); given_lse normalises by the log-sum-exp as it is in memory, so a NaN
// planted there by the diagnostics tap reaches y exactly in that row.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/kernels/flash_tiling.h"
#include "backend/cuda/kernels/mma_tiles.cuh"

namespace fsdp::cuda {

template <int D>
constexpr std::size_t forward_shared_bytes() {
  return sizeof(std::uint16_t) * (D + mma::kPad) * (flash::kQueryTile + 4 * flash::kKeyTile);  // Q, K x2, V x2
}

template <class T, int D>
__global__ void __launch_bounds__(flash::kThreads)
    flash_forward_kernel(T* y, float* lse, const T* qkv, flash::Shape sh, bool given_lse) {
  using flash::kKeyTile;
  using flash::kQueryTile;
  constexpr int S = D + mma::kPad;
  FSDP_DYNAMIC_SHARED(shared);
  T* Qs = reinterpret_cast<T*>(shared);
  T* Ks = Qs + kQueryTile * S;    // [2][kKeyTile][S]
  T* Vs = Ks + 2 * kKeyTile * S;  // [2][kKeyTile][S]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const long q0 = (flash::tile_count(sh.T, kQueryTile) - 1 - blockIdx.x) * kQueryTile;
  const long bh = blockIdx.y, b = bh / sh.H, h = bh % sh.H;
  const long ld = 3 * sh.C;
  const T* q_src = qkv + b * sh.T * ld + h * D;
  const T* k_src = q_src + sh.C;
  const T* v_src = q_src + 2 * sh.C;
  const bool with_y = y != nullptr;
  const long tiles = flash::key_tile_end(q0, kQueryTile, sh.T);

  mma::load_tile<kQueryTile, D, flash::kThreads>(Qs, q_src, ld, q0, sh.T);
  mma::load_tile<kKeyTile, D, flash::kThreads>(Ks, k_src, ld, 0, sh.T);
  if (with_y) mma::load_tile<kKeyTile, D, flash::kThreads>(Vs, v_src, ld, 0, sh.T);
  mma::cp_async_commit();

  // This thread's two rows of its warp's 16: g and g + 8.
  const long row[2] = {q0 + 16 * warp + g, q0 + 16 * warp + g + 8};
  flash::RowSoftmax st[2];
  if (given_lse) {
    for (int r = 0; r < 2; ++r) st[r] = {row[r] < sh.T ? lse[bh * sh.T + row[r]] * flash::kLog2e : 0.0f, 1.0f};
  }
  float o[D / 8][4];
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb) o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.0f;
  std::uint32_t qf[D / 16][4];

  for (long j = 0; j < tiles; ++j) {
    const int buf = static_cast<int>(j & 1);
    if (j + 1 < tiles) {
      mma::load_tile<kKeyTile, D, flash::kThreads>(Ks + (buf ^ 1) * kKeyTile * S, k_src, ld, (j + 1) * kKeyTile, sh.T);
      if (with_y)
        mma::load_tile<kKeyTile, D, flash::kThreads>(Vs + (buf ^ 1) * kKeyTile * S, v_src, ld, (j + 1) * kKeyTile,
                                                     sh.T);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) mma::load_a(qf[kk], Qs, 16 * warp, 16 * kk, S);
    }
    const T* Kt = Ks + buf * kKeyTile * S;
    const T* Vt = Vs + buf * kKeyTile * S;

    float s[kKeyTile / 8][4];
#pragma unroll
    for (int nb = 0; nb < kKeyTile / 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < kKeyTile / 16; ++np) {
        std::uint32_t bf[2][2];
        mma::load_b_pair(bf, Kt, 16 * np, 16 * kk, S);
        mma::Mma<T>::run(s[2 * np], qf[kk], bf[0]);
        mma::Mma<T>::run(s[2 * np + 1], qf[kk], bf[1]);
      }
    }

    // Scores in the log2 domain, masked on the diagonal and ragged tiles.
    const long k0 = j * kKeyTile;
    const bool masked = flash::needs_mask(q0, kQueryTile, k0, kKeyTile, sh.T);
#pragma unroll
    for (int nb = 0; nb < kKeyTile / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long col = k0 + 8 * nb + 2 * t4 + (e & 1);
        s[nb][e] = masked && !flash::visible(row[e / 2], col, sh.T) ? -INFINITY : s[nb][e] * sh.scale_log2;
      }
    }
    float correction[2] = {1.0f, 1.0f};
    if (!given_lse) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int nb = 0; nb < kKeyTile / 8; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        correction[r] = flash::rescale(st[r], mx);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = 0.0f;
#pragma unroll
      for (int nb = 0; nb < kKeyTile / 8; ++nb) {
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          s[nb][e] = flash::probability(s[nb][e], st[r].m);
          sum += s[nb][e];
        }
      }
      // This thread's part of the row sum; the four threads of a row are added at the end.
      if (!given_lse) st[r].l = st[r].l * correction[r] + sum;
    }
    if (with_y) {
#pragma unroll
      for (int nb = 0; nb < D / 8; ++nb) {
        o[nb][0] *= correction[0], o[nb][1] *= correction[0];
        o[nb][2] *= correction[1], o[nb][3] *= correction[1];
      }
#pragma unroll
      for (int kc = 0; kc < kKeyTile / 16; ++kc) {
        const std::uint32_t pa[4] = {mma::Mma<T>::pack(s[2 * kc][0], s[2 * kc][1]),
                                     mma::Mma<T>::pack(s[2 * kc][2], s[2 * kc][3]),
                                     mma::Mma<T>::pack(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                                     mma::Mma<T>::pack(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          std::uint32_t bf[2][2];
          mma::load_b_pair_trans(bf, Vt, 16 * kc, 16 * dp, S);
          mma::Mma<T>::run(o[2 * dp], pa, bf[0]);
          mma::Mma<T>::run(o[2 * dp + 1], pa, bf[1]);
        }
      }
    }
    __syncthreads();  // the buffer read here is the one the next iteration refills
  }

  if (!given_lse) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      st[r].l += __shfl_xor_sync(0xffffffffu, st[r].l, 1);
      st[r].l += __shfl_xor_sync(0xffffffffu, st[r].l, 2);
      if (t4 == 0 && row[r] < sh.T) lse[bh * sh.T + row[r]] = flash::log_sum_exp(st[r].m, st[r].l);
    }
  }
  if (!with_y) return;
  // Through the Q tile (this warp's own rows; Q is in registers) for 16-byte stores of whole rows.
  mma::stage_rows<T, D>(Qs, 16 * warp, o, 1.0f / st[0].l, 1.0f / st[1].l);
  __syncthreads();
  mma::store_tile<kQueryTile, D, flash::kThreads>(y + b * sh.T * sh.C + h * D, sh.C, q0, sh.T, Qs);
}

}  // namespace fsdp::cuda
