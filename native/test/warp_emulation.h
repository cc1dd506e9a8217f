// A CPU model of a CUDA thread block, enough to run the tensor-core attention kernels
// (backend/cuda/kernels/flash_*.cuh) in the CPU tests: every thread is a fiber (ucontext), run
// one at a time until it reaches a barrier, so a block's threads interleave deterministically.
// __syncthreads is a barrier of the block; the warp instructions (shuffles, ldmatrix, mma, cp.async)
// are collectives of 32 fibers that exchange their operands and compute what each lane receives
// from the layouts the PTX ISA documents (the same tables mma.cuh quotes). Shared memory is a
// buffer per block; every ldmatrix row and cp.async chunk is checked to lie inside it and be
// 16-byte aligned, and a block whose threads do not all reach the same barrier is reported.
//
// What this cannot tell: timing, bank conflicts, the tensor cores' own summation order (products
// here are summed in float32 in k order), and whether nvcc compiles the kernels the same way. It
// tests that the kernels index their fragments, tiles, masks and pipelines correctly.
//
// Include this first, then the kernel headers (it provides what mma.cuh provides on a GPU).
#pragma once
#include <math.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace fsdp::emulation {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

const Dim3& thread_index();
const Dim3& block_index();
const Dim3& block_dim();
unsigned char* dynamic_shared();
void sync_threads();
/**
 * Warp collective: every lane of the calling thread's warp deposits `bytes` (at most 64); once all
 * 32 have, returns their deposits (lane l's at l * 64). Valid until exchange_done(), which every
 * lane calls before the warp's next collective.
 */
const unsigned char* exchange(const void* mine, std::size_t bytes);
void exchange_done();
/** Records a violation (the first few are kept); the caller carries on without the bad access. */
void report(const std::string& what);
/** Whether [p, p + bytes) lies in this block's shared memory. */
bool in_shared(const void* p, std::size_t bytes);

/**
 * Runs `kernel` for every block of `grid` (x fastest) with `threads` threads and `shared_bytes` of
 * dynamic shared memory (zero-filled, so a read before a write is at least repeatable). Returns the
 * violations reported, empty when the run was clean.
 */
std::vector<std::string> launch(Dim3 grid, int threads, std::size_t shared_bytes, const std::function<void()>& kernel);

/** float32 <-> the two 16-bit formats, round to nearest even (as __float2bfloat16_rn, __float2half_rn). */
std::uint16_t bf16_bits(float x);
float bf16_value(std::uint16_t bits);
std::uint16_t half_bits(float x);
float half_value(std::uint16_t bits);

}  // namespace fsdp::emulation

// --- what the kernels see of CUDA ----------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __align__(n) alignas(n)
#define threadIdx (::fsdp::emulation::thread_index())
#define blockIdx (::fsdp::emulation::block_index())
#define blockDim (::fsdp::emulation::block_dim())
#define FSDP_WARP_INSTRUCTIONS 1
#define FSDP_DYNAMIC_SHARED(name) unsigned char* name = ::fsdp::emulation::dynamic_shared()

struct __nv_bfloat16 {
  std::uint16_t bits;
};
struct __half {
  std::uint16_t bits;
};
struct alignas(16) int4 {
  int x, y, z, w;
};

inline void __syncthreads() {
  ::fsdp::emulation::sync_threads();
}

template <class V>
V __shfl_xor_sync(unsigned /*mask*/, V v, int lane_mask) {
  static_assert(sizeof(V) <= 64, "shuffle of a small value");
  const unsigned char* all = ::fsdp::emulation::exchange(&v, sizeof v);
  V r;
  std::memcpy(&r, all + ((::fsdp::emulation::thread_index().x % 32) ^ static_cast<unsigned>(lane_mask)) * 64, sizeof r);
  ::fsdp::emulation::exchange_done();
  return r;
}

namespace fsdp::cuda::mma {

/** The m16n8k16 product D = A B + D of the warp, float32 accumulation (mma.cuh's Mma). */
void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2], bool bf16);

template <class T>
struct Mma;

template <>
struct Mma<__nv_bfloat16> {
  static void run(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    mma_m16n8k16(d, a, b, true);
  }
  static std::uint32_t pack(float lo, float hi) {
    return static_cast<std::uint32_t>(::fsdp::emulation::bf16_bits(lo)) |
           static_cast<std::uint32_t>(::fsdp::emulation::bf16_bits(hi)) << 16;
  }
};

template <>
struct Mma<__half> {
  static void run(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    mma_m16n8k16(d, a, b, false);
  }
  static std::uint32_t pack(float lo, float hi) {
    return static_cast<std::uint32_t>(::fsdp::emulation::half_bits(lo)) |
           static_cast<std::uint32_t>(::fsdp::emulation::half_bits(hi)) << 16;
  }
};

void ldmatrix_x4(std::uint32_t (&r)[4], const void* p);
void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p);
/** Copies at once (the emulation has no asynchrony); checks the destination is in shared memory and both are 16-byte
 * aligned. */
void cp_async16(void* dst, const void* src, bool valid);
inline void cp_async_commit() {}
template <int N>
inline void cp_async_wait() {}

}  // namespace fsdp::cuda::mma
