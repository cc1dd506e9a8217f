// Counter-based random numbers: the value at position i of a stream is a pure function of
// (key, i). Initialisation and dropout draw from streams keyed by what they are for (the seed, the
// parameter's name, the step, the micro-batch, the layer), so
//   - results do not depend on thread count or on the order work is done in;
//   - activation checkpointing replays exactly the same dropout masks when it recomputes a block
//     (the preserve_rng_state problem of PyTorch cannot arise: there is no RNG state to restore);
//   - a resumed run needs no RNG state beyond the step counter.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

// The mixers are callable from CUDA kernels too, so GPU dropout draws the CPU's masks.
#ifdef __CUDACC__
#define FSDP_HOST_DEVICE __host__ __device__
#else
#define FSDP_HOST_DEVICE
#endif

namespace fsdp {

/** SplitMix64's finaliser: a bijective 64-bit mixer with good avalanche. */
FSDP_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** CounterRng(key).uniform(i), as a free function for GPU kernels (the same arithmetic). */
FSDP_HOST_DEVICE inline float counter_uniform(std::uint64_t key, std::uint64_t i) {
  return static_cast<float>(mix64(key + (i + 1) * 0x9e3779b97f4a7c15ULL) >> 40) * (1.0f / 16777216.0f);
}

/** Folds a value into a stream key. */
inline std::uint64_t derive_key(std::uint64_t key, std::uint64_t value) {
  return mix64(key ^ mix64(value + 0x9e3779b97f4a7c15ULL));
}

/** FNV-1a of a name, to key streams by parameter names. */
inline std::uint64_t name_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

/**
 * The key whose stream continues `key`'s from position `skip`: element i of CounterRng(advance_key(k,
 * s)) is element i + s of CounterRng(k). A rank that holds part of a global batch draws the
 * dropout masks of its part of the batch this way.
 */
inline std::uint64_t advance_key(std::uint64_t key, std::uint64_t skip) {
  return key + skip * 0x9e3779b97f4a7c15ULL;
}

class CounterRng {
 public:
  explicit CounterRng(std::uint64_t key) : key_(key) {}

  std::uint64_t bits(std::uint64_t i) const { return mix64(key_ + (i + 1) * 0x9e3779b97f4a7c15ULL); }

  /** Uniform in [0, 1) with 24 random bits (exactly representable as a float). */
  float uniform(std::uint64_t i) const { return static_cast<float>(bits(i) >> 40) * (1.0f / 16777216.0f); }

  /**
   * Standard normals in pairs: Box-Muller on the 53-bit uniforms drawn at 2p and 2p + 1 gives
   * elements 2p (cosine) and 2p + 1 (sine) — one logarithm and one square root per two values.
   */
  void normal_pair(std::uint64_t p, double* even, double* odd) const {
    const double u1 = (static_cast<double>(bits(2 * p) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    const double u2 = static_cast<double>(bits(2 * p + 1) >> 11) * (1.0 / 9007199254740992.0);
    const double r = std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
    *even = r * std::cos(a);
    *odd = r * std::sin(a);
  }

  /** Standard normal number i of the stream (element i of normal_pair(i / 2)). */
  double normal(std::uint64_t i) const {
    double even, odd;
    normal_pair(i / 2, &even, &odd);
    return i % 2 == 0 ? even : odd;
  }

 private:
  std::uint64_t key_;
};

}  // namespace fsdp
