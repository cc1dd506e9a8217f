// The attention kernels on the GPU (kernels/attention.cu, flash_forward.cu, flash_backward.cu)
// against the reference attention in double (attention_case.h): every dtype — bfloat16 and
// float16 on tensor cores, float32 on CUDA cores — at head sizes 32, 64 and 128 and sequences that
// end mid-tile; the log-sum-exp-only and given-log-sum-exp modes; bitwise repeatability; one
// GPT-2-sized sequence. Every bfloat16/float16 call must have run on the tensor cores and every
// float32 call on the CUDA cores (kernels.h's attention_calls(): a silent fallback would pass the
// accuracy checks). GPU machines only (built with the CUDA backend, run by `npm run test:gpu`);
// the same tensor-core kernels run on the CPU emulation in ../flash_emulated_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attention_case.h"
#include "backend/cuda/kernels/kernels.h"
#include "device_buffer.h"
#include "half_rounding.h"

namespace fsdp::test {
namespace {

float (*rounding(DType t))(float) {
  switch (t) {
    case DType::bf16:
      return round_bf16;
    case DType::f16:
      return round_f16;
    case DType::f32:
      break;
  }
  return [](float x) { return x; };
}

/** Tolerance on y (gradients: 1.5x) relative to each tensor's largest element. */
double tolerance(DType t) {
  return t == DType::bf16 ? 8e-3 : t == DType::f16 ? 1.5e-3 : 2e-5;
}

struct Outputs {
  std::vector<float> y, lse, dqkv;
};

/** Asserts that the attention calls made since `before` (forward and backward: `calls` of them) all ran on t's path. */
void expect_path(DType t, const cuda::AttentionCalls& before, unsigned long long calls, long head_size) {
  const cuda::AttentionCalls now = cuda::attention_calls();
  const bool tensor_cores = t != DType::f32;
  EXPECT_EQ(now.tensor_cores - before.tensor_cores, tensor_cores ? calls : 0)
      << dtype_name(t) << " head size " << head_size << ": calls on tensor cores";
  EXPECT_EQ(now.cuda_cores - before.cuda_cores, tensor_cores ? 0 : calls)
      << dtype_name(t) << " head size " << head_size << ": calls on CUDA cores";
}

Outputs run(const AttentionCase& c, DType t) {
  DeviceTensor qkv(c.qkv, t), dy(c.dy, t), y(c.y.size(), t), dqkv(c.qkv.size(), t);
  DeviceTensor lse(c.lse.size(), DType::f32), delta(c.lse.size(), DType::f32);
  const cuda::AttentionCalls before = cuda::attention_calls();
  cuda::attention_forward(y.data(), lse.f32(), qkv.data(), c.B, c.T, c.C, c.H, false, t, nullptr);
  cuda::attention_backward_delta(delta.f32(), dy.data(), y.data(), c.B, c.T, c.C, c.H, t, nullptr);
  cuda::attention_backward(dqkv.data(), dy.data(), qkv.data(), lse.f32(), delta.f32(), c.B, c.T, c.C, c.H, t, nullptr);
  expect_path(t, before, 2, c.C / c.H);
  return {y.host(), lse.host(), dqkv.host()};
}

void expect_matches_reference(DType t, long B, long T, long H, long D, std::uint64_t seed) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " B " + std::to_string(B) + " T " + std::to_string(T) + " H " +
               std::to_string(H) + " head size " + std::to_string(D));
  const AttentionCase c(B, T, D * H, H, seed, rounding(t));
  const Outputs o = run(c, t);
  EXPECT_LE(scaled_error(o.y, c.y), tolerance(t)) << "y";
  EXPECT_LE(scaled_error(o.lse, c.lse), 1e-5) << "log-sum-exp";
  const long C = c.C;
  for (int part = 0; part < 3; ++part) {
    std::vector<float> got;
    std::vector<double> want;
    for (long bt = 0; bt < B * T; ++bt)
      for (long i = 0; i < C; ++i) {
        got.push_back(o.dqkv[bt * 3 * C + part * C + i]);
        want.push_back(c.dqkv[bt * 3 * C + part * C + i]);
      }
    EXPECT_LE(scaled_error(got, want), 1.5 * tolerance(t)) << "d"
                                                           << "qkv"[part];
  }
}

TEST(AttentionKernels, TensorCoresTakeBfloat16AndFloat16AtEveryCompiledHeadSize) {
  for (DType t : {DType::bf16, DType::f16})
    for (long D : {32L, 64L, 128L}) EXPECT_TRUE(cuda::flash_attention_supports(t, D, 48 * 12));
  EXPECT_FALSE(cuda::flash_attention_supports(DType::f32, 64, 1));
  EXPECT_FALSE(cuda::flash_attention_supports(DType::bf16, 80, 1));
  // And the calls really run there, forward (all three modes) and backward, at GPT-2's shapes too.
  for (DType t : {DType::bf16, DType::f16})
    for (long D : {32L, 64L, 128L}) {
      const AttentionCase c(2, 130, D * 2, 2, 90 + D, rounding(t));
      DeviceTensor qkv(c.qkv, t), y(c.y.size(), t), lse(c.lse.size(), DType::f32);
      const cuda::AttentionCalls before = cuda::attention_calls();
      cuda::attention_forward(y.data(), lse.f32(), qkv.data(), c.B, c.T, c.C, c.H, false, t, nullptr);
      cuda::attention_forward(nullptr, lse.f32(), qkv.data(), c.B, c.T, c.C, c.H, false, t, nullptr);
      cuda::attention_forward(y.data(), lse.f32(), qkv.data(), c.B, c.T, c.C, c.H, true, t, nullptr);
      expect_path(t, before, 3, D);
      run(c, t);
    }
}

TEST(AttentionKernels, EveryDtypeAndHeadSizeMatchesTheReferenceOnWholeAndRaggedTiles) {
  std::uint64_t seed = 1;
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    for (long D : {32L, 64L, 128L})
      for (long T : {1L, 63L, 64L, 65L, 130L, 200L}) expect_matches_reference(t, 2, T, 2, D, seed++);
}

TEST(AttentionKernels, AGpt2SizedSequenceMatchesTheReference) {
  expect_matches_reference(DType::bf16, 1, 1024, 2, 64, 40);
  expect_matches_reference(DType::bf16, 1, 2048, 1, 128, 41);
}

TEST(AttentionKernels, LogSumExpOnlyIsTheFullForwardsBitForBit) {
  for (DType t : {DType::bf16, DType::f32}) {
    const AttentionCase c(2, 100, 128, 2, 50, rounding(t));
    DeviceTensor qkv(c.qkv, t), y(c.y.size(), t), full(c.lse.size(), DType::f32), only(c.lse.size(), DType::f32);
    const cuda::AttentionCalls before = cuda::attention_calls();
    cuda::attention_forward(y.data(), full.f32(), qkv.data(), c.B, c.T, c.C, c.H, false, t, nullptr);
    cuda::attention_forward(nullptr, only.f32(), qkv.data(), c.B, c.T, c.C, c.H, false, t, nullptr);
    expect_path(t, before, 2, c.C / c.H);
    EXPECT_EQ(full.host(), only.host()) << dtype_name(t);
  }
}

TEST(AttentionKernels, AGivenLogSumExpCarriesAPlantedNanToItsRowAndHeadOnly) {
  for (DType t : {DType::bf16, DType::f16, DType::f32}) {
    const long B = 1, T = 150, H = 2, D = 64, C = D * H;
    const AttentionCase c(B, T, C, H, 60, rounding(t));
    DeviceTensor qkv(c.qkv, t), y(c.y.size(), t), y_nan(c.y.size(), t), lse(c.lse.size(), DType::f32);
    cuda::attention_forward(y.data(), lse.f32(), qkv.data(), B, T, C, H, false, t, nullptr);
    cuda::attention_forward(y.data(), lse.f32(), qkv.data(), B, T, C, H, true, t, nullptr);
    EXPECT_LE(scaled_error(y.host(), c.y), tolerance(t)) << dtype_name(t) << ": y from the given log-sum-exp";
    std::vector<float> l = lse.host();
    const long h = 1, row = 129;
    l[h * T + row] = NAN;
    lse.upload(l);
    cuda::attention_forward(y_nan.data(), lse.f32(), qkv.data(), B, T, C, H, true, t, nullptr);
    const std::vector<float> a = y.host(), b = y_nan.host();
    for (long r = 0; r < T; ++r)
      for (long i = 0; i < C; ++i) {
        if (r == row && i / D == h)
          EXPECT_TRUE(std::isnan(b[r * C + i])) << dtype_name(t) << " row " << r << " channel " << i;
        else
          EXPECT_EQ(a[r * C + i], b[r * C + i]) << dtype_name(t) << " row " << r << " channel " << i;
      }
  }
}

TEST(AttentionKernels, RepeatedRunsAreBitwiseIdentical) {
  for (DType t : {DType::bf16, DType::f32}) {
    const AttentionCase c(2, 300, 256, 4, 70, rounding(t));
    const Outputs a = run(c, t), b = run(c, t);
    EXPECT_EQ(0, std::memcmp(a.y.data(), b.y.data(), sizeof(float) * a.y.size())) << dtype_name(t);
    EXPECT_EQ(0, std::memcmp(a.dqkv.data(), b.dqkv.data(), sizeof(float) * a.dqkv.size())) << dtype_name(t);
  }
}

}  // namespace
}  // namespace fsdp::test
