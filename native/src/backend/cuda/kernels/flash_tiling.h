// The tiling of the tensor-core attention kernels (flash_forward.cu, flash_backward.cu) in plain
// C++ that nvcc and the host compiler both compile: which key tiles a query tile visits and in
// which order, which pairs of tiles need the element mask (the diagonal and the ragged last tile),
// the causal/ragged mask itself, and the online-softmax update. The kernels call
// these functions, so the logic that decides what is summed, in which order and what is masked is
// tested on any machine: alone (native/test/flash_tiling_test.cc), and inside the kernels run on
// the CPU emulation of a thread block (native/test/flash_emulated_test.cc, P and dS rounded to the
// compute dtype where the kernels round them) against the reference attention.
//
// Conventions: T positions; a query tile is kQueryTile rows starting at a multiple of it; key tiles
// are kKeyTile columns. Scores are kept in the log2 domain (s * scale * log2 e) so the kernels use
// exp2; log-sum-exps are stored in natural units, as the float32 kernels store them.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define FSDP_HD __host__ __device__ __forceinline__
#else
#define FSDP_HD inline
#endif

namespace fsdp::flash {

/** Rows of a query tile in the forward and dQ kernels: 4 warps of 16 rows (the mma's M). */
constexpr int kQueryTile = 64;
/** Columns of a key tile everywhere; rows of the dK/dV kernel's own key tile (4 warps of 16). */
constexpr int kKeyTile = 64;
constexpr int kWarps = 4;
/** Threads of every block of the tensor-core kernels. */
constexpr int kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

/** One attention call: B sequences of T positions, H heads of C / H channels; the softmax scale 1/sqrt(C/H) and it
 * times log2 e. */
struct Shape {
  long B = 0, T = 0, C = 0, H = 0;
  float scale = 0.0f, scale_log2 = 0.0f;
  static Shape of(long B, long T, long C, long H) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(C / H));
    return {B, T, C, H, scale, scale * kLog2e};
  }
};

/**
 * Queries per tile the dK/dV kernel streams: 32 at head size 128 (its dK and dV accumulators take
 * 128 registers a thread; 64 queries would spill), 64 otherwise.
 */
FSDP_HD constexpr int dkdv_query_tile(int head_size) {
  return head_size >= 128 ? 32 : 64;
}

FSDP_HD long tile_count(long T, int tile) {
  return (T + tile - 1) / tile;
}

/**
 * The key tiles query tile [q0, q0 + rows) visits: 0 .. key_tile_end - 1, in ascending order (the
 * order of the online softmax and of dQ's sum). Causal: the last is the one holding the tile's last
 * valid query, min(q0 + rows, T) - 1.
 */
FSDP_HD long key_tile_end(long q0, int rows, long T) {
  const long last = (q0 + rows < T ? q0 + rows : T) - 1;
  return last / kKeyTile + 1;
}

/**
 * The first query tile (of `rows` rows) key tile [k0, k0 + kKeyTile) is visited by: the one holding
 * query k0. dK and dV sum over query tiles from it to the last, in ascending order.
 */
FSDP_HD long query_tile_begin(long k0, int rows) {
  return k0 / rows;
}

/** Whether query q attends to key k: causal (k <= q) and q a real position (q < T), so k < T too. */
FSDP_HD bool visible(long q, long k, long T) {
  return k <= q && q < T;
}

/**
 * Whether some pair of a query tile and a key tile is not visible: the tile straddles the
 * diagonal, or runs past the sequence's end. Tiles for which this is false skip the element mask.
 */
FSDP_HD bool needs_mask(long q0, int rows, long k0, int cols, long T) {
  return k0 + cols - 1 > q0 || q0 + rows > T || k0 + cols > T;
}

/**
 * The online softmax of one row, in the log2 domain: the running maximum m and the running sum l
 * of exp2(s - m) over the keys seen so far. A row that has seen only masked keys keeps m = -inf and
 * l = 0 (a padding row past T): the reference point is then 0, so no inf - inf is ever formed.
 */
struct RowSoftmax {
  float m = -INFINITY;
  float l = 0.0f;
};

/** The reference point exp2 is taken against once the maximum is m: m, or 0 while m is -inf. */
FSDP_HD float reference_point(float m) {
  return m == -INFINITY ? 0.0f : m;
}

/**
 * Moves the row to a new tile whose largest (masked) score is tile_max; returns the factor the
 * accumulated sum and output are multiplied by (exp2(m_old - m_new); 0 for a row that had nothing).
 */
FSDP_HD float rescale(RowSoftmax& r, float tile_max) {
  const float m_new = r.m > tile_max ? r.m : tile_max;
  const float correction = exp2f(r.m - reference_point(m_new));
  r.m = m_new;
  return correction;
}

/** exp2 of a score against the row's reference point (masked scores are -inf: 0). */
FSDP_HD float probability(float s_log2, float m) {
  return exp2f(s_log2 - reference_point(m));
}

/** The row's natural log-sum-exp once every key is seen (l summed over the whole row). */
FSDP_HD float log_sum_exp(float m, float l) {
  return (m + log2f(l)) * kLn2;
}

/** Head sizes the tensor-core kernels are compiled for. */
FSDP_HD constexpr bool compiled_head_size(long hs) {
  return hs == 32 || hs == 64 || hs == 128;
}

/** Calls f(std::integral_constant<int, D>) for a compiled head size D; false for any other. */
template <class F>
bool with_head_size(long hs, F&& f) {
  switch (hs) {
    case 32:
      f(std::integral_constant<int, 32>{});
      return true;
    case 64:
      f(std::integral_constant<int, 64>{});
      return true;
    case 128:
      f(std::integral_constant<int, 128>{});
      return true;
    default:
      return false;
  }
}

}  // namespace fsdp::flash
