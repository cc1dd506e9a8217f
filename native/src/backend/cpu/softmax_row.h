// Softmax of one row in place, shared by attention (over the keys) and the loss (over the
// vocabulary): subtract the max, exponentiate with libmvec, normalise.
#pragma once
#include <cmath>

#include "backend/cpu/vector_math.h"

namespace fsdp {

/** row[0..n) becomes softmax(row); returns log(sum(exp(row))), the log-sum-exp of the input. */
inline float softmax_in_place(float* row, long n) {
  float max = -INFINITY;
#pragma omp simd reduction(max : max)
  for (long i = 0; i < n; ++i) max = row[i] > max ? row[i] : max;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (long i = 0; i < n; ++i) {
    row[i] = expf(row[i] - max);
    sum += row[i];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (long i = 0; i < n; ++i) row[i] *= inv;
  return max + std::log(sum);
}

}  // namespace fsdp
