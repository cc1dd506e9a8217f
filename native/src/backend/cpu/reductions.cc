// Whole-buffer helpers and reductions. Sums are taken over fixed chunks whose partial results are
// added in order, so they do not depend on the number of threads.
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

namespace {

constexpr std::size_t kChunk = 1 << 15;

template <class F>
double chunked_sum(std::size_t n, F&& partial) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> parts(chunks);
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t lo = c * kChunk, hi = lo + kChunk < n ? lo + kChunk : n;
    parts[c] = partial(lo, hi);
  }
  double total = 0;
  for (double p : parts) total += p;
  return total;
}

}  // namespace

void CpuBackend::fill(float* x, std::size_t n, float value) {
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) x[i] = value;
}

void CpuBackend::copy(float* dst, const float* src, std::size_t n) {
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < n; c += kChunk)
    std::memcpy(dst + c, src + c, sizeof(float) * (c + kChunk < n ? kChunk : n - c));
}

double CpuBackend::sum(const float* x, std::size_t n) {
  return chunked_sum(n, [x](std::size_t lo, std::size_t hi) {
    double s = 0;
    for (std::size_t i = lo; i < hi; ++i) s += x[i];
    return s;
  });
}

double CpuBackend::sum_squares(const float* x, std::size_t n) {
  return chunked_sum(n, [x](std::size_t lo, std::size_t hi) {
    double s = 0;
    for (std::size_t i = lo; i < hi; ++i) s += static_cast<double>(x[i]) * x[i];
    return s;
  });
}

TensorStats CpuBackend::stats(const float* x, std::size_t n) {
  // Diagnostics only: mean, std and max |x| over the finite values.
  TensorStats s;
  double sum = 0, sq = 0, max_abs = 0;
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_finite(x[i])) {
      ++bad;
      continue;
    }
    sum += x[i];
    sq += static_cast<double>(x[i]) * x[i];
    max_abs = std::fmax(max_abs, std::fabs(x[i]));
  }
  const double good = static_cast<double>(n - bad);
  s.nonfinite = bad;
  if (good > 0) {
    s.mean = sum / good;
    s.std = std::sqrt(std::fmax(0.0, sq / good - s.mean * s.mean));
    s.max_abs = max_abs;
  }
  return s;
}

}  // namespace fsdp
