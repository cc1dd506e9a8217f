// Causal attention backward on tensor cores (FlashAttention-2's algorithm), bfloat16 and float16
// with float32 accumulation, from the forward's log-sum-exp and delta = rowsum(dO o O). Two
// kernels, so that every gradient is one block's sum in a fixed order and no atomics are needed
// (a run is bitwise repeatable):
//   dK, dV: a block owns 64 keys (16 a warp) and streams the query tiles from the diagonal to the
//           end: S^T = K Q^T, P^T = exp(S^T - lse), dP^T = V dO^T, dS^T = P^T o (dP^T - delta),
//           dV += P^T dO, dK += dS^T Q;
//   dQ:     a block owns 64 queries and streams the key tiles up to the diagonal: S, P, dP, dS as
//           above by rows, dQ += dS K.
// P and dS are rounded to the compute dtype where they feed a product, as in the forward. The dQ
// kernel recomputes S and dP (7 products where FlashAttention-2's atomic dQ has 5): the price of
// determinism without a GPU-wide ordered reduction.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/kernels/flash_tiling.h"
#include "backend/cuda/kernels/mma_tiles.cuh"

namespace fsdp::cuda {

template <int D>
constexpr std::size_t dkdv_shared_bytes() {
  constexpr int BQ = flash::dkdv_query_tile(D);
  return sizeof(std::uint16_t) * (D + mma::kPad) * (2 * flash::kKeyTile + 4 * BQ) +
         sizeof(float) * 4 * BQ;  // K, V; Q, dO x2; lse, delta x2
}

template <int D>
constexpr std::size_t dq_shared_bytes() {
  return sizeof(std::uint16_t) * (D + mma::kPad) * (2 * flash::kQueryTile + 4 * flash::kKeyTile);  // Q, dO; K, V x2
}

template <class T, int D>
__global__ void __launch_bounds__(flash::kThreads)
    flash_dkdv_kernel(T* dqkv, const T* dy, const T* qkv, const float* lse, const float* delta, flash::Shape sh) {
  using flash::kKeyTile;
  using flash::kQueryTile;
  constexpr int S = D + mma::kPad, BQ = flash::dkdv_query_tile(D);
  FSDP_DYNAMIC_SHARED(shared);
  T* Ks = reinterpret_cast<T*>(shared);
  T* Vs = Ks + kKeyTile * S;
  T* Qs = Vs + kKeyTile * S;                              // [2][BQ][S]
  T* Ds = Qs + 2 * BQ * S;                                // [2][BQ][S] dO
  float* Ls = reinterpret_cast<float*>(Ds + 2 * BQ * S);  // [2][BQ] lse, log2 domain
  float* Es = Ls + 2 * BQ;                                // [2][BQ] delta
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const long k0 =
      blockIdx.x * static_cast<long>(kKeyTile);  // the first key tiles have the most queries: they start first
  const long bh = blockIdx.y, b = bh / sh.H, h = bh % sh.H;
  const long ld = 3 * sh.C;
  const T* q_src = qkv + b * sh.T * ld + h * D;
  const T* dy_src = dy + b * sh.T * sh.C + h * D;
  const long first = flash::query_tile_begin(k0, BQ), end = flash::tile_count(sh.T, BQ);

  auto prefetch = [&](long tile, int buf) {
    mma::load_tile<BQ, D, flash::kThreads>(Qs + buf * BQ * S, q_src, ld, tile * BQ, sh.T);
    mma::load_tile<BQ, D, flash::kThreads>(Ds + buf * BQ * S, dy_src, sh.C, tile * BQ, sh.T);
    for (int e = threadIdx.x; e < BQ; e += flash::kThreads) {
      const long q = tile * BQ + e;
      Ls[buf * BQ + e] = q < sh.T ? lse[bh * sh.T + q] * flash::kLog2e : 0.0f;
      Es[buf * BQ + e] = q < sh.T ? delta[bh * sh.T + q] : 0.0f;
    }
  };
  mma::load_tile<kKeyTile, D, flash::kThreads>(Ks, q_src + sh.C, ld, k0, sh.T);
  mma::load_tile<kKeyTile, D, flash::kThreads>(Vs, q_src + 2 * sh.C, ld, k0, sh.T);
  prefetch(first, 0);
  mma::cp_async_commit();

  const long key[2] = {k0 + 16 * warp + g, k0 + 16 * warp + g + 8};
  float dk[D / 8][4], dv[D / 8][4];
  mma::clear(dk);
  mma::clear(dv);
  for (long i = first; i < end; ++i) {
    const int buf = static_cast<int>((i - first) & 1);
    if (i + 1 < end) {
      prefetch(i + 1, buf ^ 1);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    const T* Qt = Qs + buf * BQ * S;
    const T* Dt = Ds + buf * BQ * S;
    const float* Lt = Ls + buf * BQ;
    const float* Et = Es + buf * BQ;
    const long q0 = i * BQ;
    const bool masked = flash::needs_mask(q0, BQ, k0, kKeyTile, sh.T);

    float p[BQ / 8][4], dp[BQ / 8][4];
    mma::product_nt<T, D, BQ / 8>(p, Ks, 16 * warp, Qt);   // S^T: rows keys, columns queries
    mma::product_nt<T, D, BQ / 8>(dp, Vs, 16 * warp, Dt);  // dP^T
#pragma unroll
    for (int nb = 0; nb < BQ / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 8 * nb + 2 * t4 + (e & 1);
        const bool seen = !masked || flash::visible(q0 + c, key[e / 2], sh.T);
        p[nb][e] = seen ? exp2f(p[nb][e] * sh.scale_log2 - Lt[c]) : 0.0f;
        dp[nb][e] = p[nb][e] * (dp[nb][e] - Et[c]);  // dS^T
      }
    }
    mma::accumulate_pv<T, D, BQ / 8>(dv, p, Dt);
    mma::accumulate_pv<T, D, BQ / 8>(dk, dp, Qt);
    __syncthreads();
  }

  // Through the K and V tiles (this warp's own rows) for 16-byte stores.
  mma::stage_rows<T, D>(Ks, 16 * warp, dk, sh.scale, sh.scale);
  mma::stage_rows<T, D>(Vs, 16 * warp, dv, 1.0f, 1.0f);
  __syncthreads();
  T* out = dqkv + b * sh.T * ld + h * D;
  mma::store_tile<kKeyTile, D, flash::kThreads>(out + sh.C, ld, k0, sh.T, Ks);
  mma::store_tile<kKeyTile, D, flash::kThreads>(out + 2 * sh.C, ld, k0, sh.T, Vs);
}

template <class T, int D>
__global__ void __launch_bounds__(flash::kThreads)
    flash_dq_kernel(T* dqkv, const T* dy, const T* qkv, const float* lse, const float* delta, flash::Shape sh) {
  using flash::kKeyTile;
  using flash::kQueryTile;
  constexpr int S = D + mma::kPad;
  FSDP_DYNAMIC_SHARED(shared);
  T* Qs = reinterpret_cast<T*>(shared);
  T* Ds = Qs + kQueryTile * S;    // dO
  T* Ks = Ds + kQueryTile * S;    // [2][kKeyTile][S]
  T* Vs = Ks + 2 * kKeyTile * S;  // [2][kKeyTile][S]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  const long q0 = (flash::tile_count(sh.T, kQueryTile) - 1 - blockIdx.x) * kQueryTile;
  const long bh = blockIdx.y, b = bh / sh.H, h = bh % sh.H;
  const long ld = 3 * sh.C;
  const T* q_src = qkv + b * sh.T * ld + h * D;
  const T* k_src = q_src + sh.C;
  const T* v_src = q_src + 2 * sh.C;
  const long tiles = flash::key_tile_end(q0, kQueryTile, sh.T);

  mma::load_tile<kQueryTile, D, flash::kThreads>(Qs, q_src, ld, q0, sh.T);
  mma::load_tile<kQueryTile, D, flash::kThreads>(Ds, dy + b * sh.T * sh.C + h * D, sh.C, q0, sh.T);
  mma::load_tile<kKeyTile, D, flash::kThreads>(Ks, k_src, ld, 0, sh.T);
  mma::load_tile<kKeyTile, D, flash::kThreads>(Vs, v_src, ld, 0, sh.T);
  mma::cp_async_commit();

  const long row[2] = {q0 + 16 * warp + g, q0 + 16 * warp + g + 8};
  float L[2], E[2];
  for (int r = 0; r < 2; ++r) {
    L[r] = row[r] < sh.T ? lse[bh * sh.T + row[r]] * flash::kLog2e : 0.0f;
    E[r] = row[r] < sh.T ? delta[bh * sh.T + row[r]] : 0.0f;
  }
  float dq[D / 8][4];
  mma::clear(dq);
  for (long j = 0; j < tiles; ++j) {
    const int buf = static_cast<int>(j & 1);
    if (j + 1 < tiles) {
      mma::load_tile<kKeyTile, D, flash::kThreads>(Ks + (buf ^ 1) * kKeyTile * S, k_src, ld, (j + 1) * kKeyTile, sh.T);
      mma::load_tile<kKeyTile, D, flash::kThreads>(Vs + (buf ^ 1) * kKeyTile * S, v_src, ld, (j + 1) * kKeyTile, sh.T);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    const T* Kt = Ks + buf * kKeyTile * S;
    const T* Vt = Vs + buf * kKeyTile * S;
    const long k0 = j * kKeyTile;
    const bool masked = flash::needs_mask(q0, kQueryTile, k0, kKeyTile, sh.T);

    float p[kKeyTile / 8][4], ds[kKeyTile / 8][4];
    mma::product_nt<T, D, kKeyTile / 8>(p, Qs, 16 * warp, Kt);   // S
    mma::product_nt<T, D, kKeyTile / 8>(ds, Ds, 16 * warp, Vt);  // dP
#pragma unroll
    for (int nb = 0; nb < kKeyTile / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long col = k0 + 8 * nb + 2 * t4 + (e & 1);
        const bool seen = !masked || flash::visible(row[e / 2], col, sh.T);
        p[nb][e] = seen ? exp2f(p[nb][e] * sh.scale_log2 - L[e / 2]) : 0.0f;
        ds[nb][e] = p[nb][e] * (ds[nb][e] - E[e / 2]);
      }
    }
    mma::accumulate_pv<T, D, kKeyTile / 8>(dq, ds, Kt);  // dQ += dS K (K stored [key][channel])
    __syncthreads();
  }
  mma::stage_rows<T, D>(Qs, 16 * warp, dq, sh.scale, sh.scale);
  __syncthreads();
  mma::store_tile<kQueryTile, D, flash::kThreads>(dqkv + b * sh.T * ld + h * D, ld, q0, sh.T, Qs);
}

}  // namespace fsdp::cuda
