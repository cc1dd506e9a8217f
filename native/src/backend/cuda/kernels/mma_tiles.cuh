// Tiles of the attention kernels on top of the warp instructions (mma.cuh on a GPU, the CPU
// emulation in the tests): operand fragments from padded shared-memory tiles, and whole tiles
// between global and shared memory. Layouts of the fragments: mma.cuh.
#pragma once
#include <cstdint>

// The instructions must be declared first: mma.cuh on a GPU, native/test/warp_emulation.h on a CPU.
#ifndef FSDP_WARP_INSTRUCTIONS
#error "include backend/cuda/kernels/mma.cuh (or the tests' warp emulation) before mma_tiles.cuh"
#endif

namespace fsdp::cuda::mma {

/** Shared-memory tiles are rows of D elements padded by 8 (16 bytes): ldmatrix's 8 row reads then hit 8 different bank
 * groups. */
constexpr int kPad = 8;

/**
 * The A fragment of rows row0..row0+15, columns k0..k0+15 of a row-major tile (stride in
 * elements). Lanes 0-15 address rows 0-15 at k0, lanes 16-31 the same rows at k0 + 8: the four 8x8
 * matrices come back as a0a1, a2a3, a4a5, a6a7.
 */
template <class T>
__device__ __forceinline__ void load_a(std::uint32_t (&a)[4], const T* tile, int row0, int k0, int stride) {
  const int lane = threadIdx.x % 32;
  ldmatrix_x4(a, tile + (row0 + lane % 16) * stride + k0 + (lane / 16) * 8);
}

/**
 * B fragments of two 8-column blocks (n0..n0+7 and n0+8..n0+15) over k0..k0+15, from a tile stored
 * [n][k] row-major (K for S = Q K^T: a key's channels are contiguous). Matrix j = lane / 8 is rows
 * n0 + (j / 2) * 8 .., columns k0 + (j % 2) * 8 ..: registers b[0][0], b[0][1], b[1][0], b[1][1].
 */
template <class T>
__device__ __forceinline__ void load_b_pair(std::uint32_t (&b)[2][2], const T* tile, int n0, int k0, int stride) {
  const int lane = threadIdx.x % 32, j = lane / 8;
  std::uint32_t r[4];
  ldmatrix_x4(r, tile + (n0 + (j / 2) * 8 + lane % 8) * stride + k0 + (j % 2) * 8);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

/**
 * B fragments of two 8-column blocks (n0.., n0+8..) over k0..k0+15, from a tile stored [k][n]
 * row-major (V for O = P V: k is the key, n the channel), transposed by ldmatrix: matrix j is rows
 * k0 + (j % 2) * 8 .., columns n0 + (j / 2) * 8 ...
 */
template <class T>
__device__ __forceinline__ void load_b_pair_trans(std::uint32_t (&b)[2][2], const T* tile, int k0, int n0, int stride) {
  const int lane = threadIdx.x % 32, j = lane / 8;
  std::uint32_t r[4];
  ldmatrix_x4_trans(r, tile + (k0 + (j % 2) * 8 + lane % 8) * stride + n0 + (j / 2) * 8);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

/**
 * Rows r0..r0+ROWS of one head's D channels into a padded shared tile: dst[r][0..D) from
 * src[(r0 + r) * ld ..], zeros for rows at or past T. The whole block (THREADS threads) takes part.
 */
template <int ROWS, int D, int THREADS, class T>
__device__ __forceinline__ void load_tile(T* dst, const T* src, long ld, long r0, long T_) {
  constexpr int kChunks = D / 8;  // 16-byte chunks a row
  for (int e = threadIdx.x; e < ROWS * kChunks; e += THREADS) {
    const int r = e / kChunks, c = e % kChunks;
    const bool valid = r0 + r < T_;
    cp_async16(dst + r * (D + kPad) + c * 8, valid ? src + (r0 + r) * ld + c * 8 : src, valid);
  }
}

/** The reverse: rows of a padded shared tile to global memory in 16-byte stores, rows past T skipped. */
template <int ROWS, int D, int THREADS, class T>
__device__ __forceinline__ void store_tile(T* dst, long ld, long r0, long T_, const T* src) {
  constexpr int kChunks = D / 8;
  for (int e = threadIdx.x; e < ROWS * kChunks; e += THREADS) {
    const int r = e / kChunks, c = e % kChunks;
    if (r0 + r < T_)
      *reinterpret_cast<int4*>(dst + (r0 + r) * ld + c * 8) =
          *reinterpret_cast<const int4*>(src + r * (D + kPad) + c * 8);
  }
}

/**
 * A warp's 16 x D float32 accumulator (C fragments of D / 8 column blocks), times row factors, as
 * T into rows row0..row0+15 of a padded shared tile.
 */
template <class T, int D>
__device__ __forceinline__ void stage_rows(T* tile, int row0, const float (&acc)[D / 8][4], float lo_factor,
                                           float hi_factor) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int nb = 0; nb < D / 8; ++nb) {
    const std::uint32_t lo = Mma<T>::pack(acc[nb][0] * lo_factor, acc[nb][1] * lo_factor);
    const std::uint32_t hi = Mma<T>::pack(acc[nb][2] * hi_factor, acc[nb][3] * hi_factor);
    *reinterpret_cast<std::uint32_t*>(tile + (row0 + g) * (D + kPad) + nb * 8 + 2 * t) = lo;
    *reinterpret_cast<std::uint32_t*>(tile + (row0 + g + 8) * (D + kPad) + nb * 8 + 2 * t) = hi;
  }
}

/** acc[16 x 8 * NB] = A-tile rows (16 at row0 of `a`) times B-tile rows (8 * NB at 0 of `b`)^T over D channels: both
 * stored [row][channel]. */
template <class T, int D, int NB>
__device__ __forceinline__ void product_nt(float (&acc)[NB][4], const T* a, int row0, const T* b) {
  constexpr int S = D + kPad;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    std::uint32_t af[4];
    load_a(af, a, row0, 16 * kk, S);
#pragma unroll
    for (int np = 0; np < NB / 2; ++np) {
      std::uint32_t bf[2][2];
      load_b_pair(bf, b, 16 * np, 16 * kk, S);
      Mma<T>::run(acc[2 * np], af, bf[0]);
      Mma<T>::run(acc[2 * np + 1], af, bf[1]);
    }
  }
}

/** out[16 x D] += P[16 x 8 * NB] (registers, rounded to T) times B[8 * NB x D] (shared, stored [k][channel]). */
template <class T, int D, int NB>
__device__ __forceinline__ void accumulate_pv(float (&out)[D / 8][4], const float (&p)[NB][4], const T* b) {
  constexpr int S = D + kPad;
#pragma unroll
  for (int kc = 0; kc < NB / 2; ++kc) {
    const std::uint32_t pa[4] = {Mma<T>::pack(p[2 * kc][0], p[2 * kc][1]), Mma<T>::pack(p[2 * kc][2], p[2 * kc][3]),
                                 Mma<T>::pack(p[2 * kc + 1][0], p[2 * kc + 1][1]),
                                 Mma<T>::pack(p[2 * kc + 1][2], p[2 * kc + 1][3])};
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      std::uint32_t bf[2][2];
      load_b_pair_trans(bf, b, 16 * kc, 16 * dp, S);
      Mma<T>::run(out[2 * dp], pa, bf[0]);
      Mma<T>::run(out[2 * dp + 1], pa, bf[1]);
    }
  }
}

template <int N>
__device__ __forceinline__ void clear(float (&acc)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
}

}  // namespace fsdp::cuda::mma
