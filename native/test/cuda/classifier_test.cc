// The CUDA classifier (backend/cuda/classifier.cc, kernels/loss.cu) against the CPU backend's
// (Backend::classifier_* composed from linear_forward and softmax_xent_*) on the same rounded
// inputs: losses, the logits an evaluation copies out, dx and dW, at vocabularies below 128, a
// multiple of 128, one with a tail, and GPT-2's 50257; the padding stays inside the logits (dW's
// rows past V untouched, padded logit columns zero); a tap sees [N, V] rows and its NaN reaches
// exactly its token's loss. GPU machines only.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention_case.h"  // scaled_error
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/padded_vocab.h"
#include "device_buffer.h"
#include "half_rounding.h"
#include "runtime/rng.h"

namespace fsdp::test {
namespace {

struct Case {
  long N, C, V;
  std::vector<float> x, w, dw0;
  std::vector<std::int32_t> targets;
  Case(long n, long c, long v, DType t, std::uint64_t seed)
      : N(n), C(c), V(v), x(n * c), w(v * c), dw0(v * c), targets(n) {
    const CounterRng rng(seed);
    auto round = [t](float f) { return t == DType::bf16 ? round_bf16(f) : t == DType::f16 ? round_f16(f) : f; };
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = round(4 * rng.uniform(i) - 2);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = round(0.2f * (2 * rng.uniform(x.size() + i) - 1));
    for (std::size_t i = 0; i < dw0.size(); ++i) dw0[i] = rng.uniform(2 * w.size() + x.size() + i) - 0.5f;
    for (long i = 0; i < n; ++i) targets[i] = static_cast<std::int32_t>(rng.bits(9000000 + i) % v);
  }
};

struct Result {
  std::vector<float> losses, logits, dx, dw;
};

Result on_cpu(const Case& c, float scale) {
  CpuBackend be;
  Result r{std::vector<float>(c.N), std::vector<float>(c.N * c.V), std::vector<float>(c.N * c.C), c.dw0};
  std::vector<float> state(be.classifier_state_bytes(c.N, c.V) / sizeof(float));
  be.classifier_forward(state.data(), r.losses.data(), c.x.data(), c.w.data(), c.targets.data(), c.N, c.C, c.V, nullptr,
                        r.logits.data());
  be.classifier_backward(r.dx.data(), r.dw.data(), state.data(), c.x.data(), c.w.data(), c.targets.data(), c.N, c.C,
                         c.V, scale, nullptr);
  return r;
}

/** The CUDA backend's classifier; dW has 3 guard rows past V that must come back as they went in. */
Result on_gpu(const Case& c, DType t, float scale, std::vector<float>* padded_state = nullptr,
              ClassifierTap* tap = nullptr) {
  BackendOptions o;
  o.compute = t;
  cuda::CudaBackend be(o);
  const long guard = 3;
  DeviceTensor x(c.x, t), w(c.w, t), dx(c.N * c.C, t), losses(c.N, DType::f32), targets(c.N, DType::f32);
  std::vector<float> dw_host(c.dw0);
  dw_host.resize((c.V + guard) * c.C, 12345.0f);
  DeviceTensor dw(dw_host, DType::f32);
  cuda_check(cudaMemcpy(targets.data(), c.targets.data(), sizeof(std::int32_t) * c.N, cudaMemcpyHostToDevice),
             "targets");
  Result r{{}, std::vector<float>(c.N * c.V), {}, {}};
  const long Vp = padded_vocab(c.V);
  DeviceTensor state(c.N * Vp, t);
  EXPECT_EQ(be.classifier_state_bytes(c.N, c.V), state.bytes());
  const auto* tg = static_cast<const std::int32_t*>(targets.data());
  be.classifier_forward(state.data(), losses.f32(), x.data(), w.data(), tg, c.N, c.C, c.V, tap, r.logits.data());
  be.synchronize();
  if (padded_state) *padded_state = state.host();
  be.classifier_backward(dx.data(), dw.f32(), state.data(), x.data(), w.data(), tg, c.N, c.C, c.V, scale, tap);
  be.synchronize();
  r.losses = losses.host(), r.dx = dx.host(), r.dw = dw.host();
  for (long i = c.V * c.C; i < (c.V + guard) * c.C; ++i)
    EXPECT_EQ(r.dw[i], 12345.0f) << "dW written past the vocabulary at " << i;
  r.dw.resize(c.V * c.C);
  return r;
}

void expect_close(DType t, long N, long C, long V) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " N " + std::to_string(N) + " C " + std::to_string(C) + " V " +
               std::to_string(V));
  const Case c(N, C, V, t, static_cast<std::uint64_t>(V));
  const float scale = 0.5f / static_cast<float>(N);
  const Result cpu = on_cpu(c, scale);
  std::vector<float> state;
  const Result gpu = on_gpu(c, t, scale, &state);
  // float32: the same products up to summation order; 16-bit: logits and dlogits rounded to 8 (11) bits.
  const double tol = t == DType::f32 ? 1e-5 : t == DType::bf16 ? 1e-2 : 2e-3;
  EXPECT_LE(scaled_error(gpu.losses, cpu.losses), tol) << "losses";
  EXPECT_LE(scaled_error(gpu.logits, cpu.logits), tol) << "logits copied out";
  EXPECT_LE(scaled_error(gpu.dx, cpu.dx), 2 * tol) << "dx";
  std::vector<float> ddw_gpu(gpu.dw), ddw_cpu(cpu.dw);  // compare the increments, not dw0
  for (std::size_t i = 0; i < ddw_gpu.size(); ++i) ddw_gpu[i] -= c.dw0[i], ddw_cpu[i] -= c.dw0[i];
  EXPECT_LE(scaled_error(ddw_gpu, ddw_cpu), 2 * tol) << "dW";
  const long Vp = padded_vocab(V);
  for (long r = 0; r < N; ++r)
    for (long v = V; v < Vp; ++v)
      ASSERT_EQ(state[r * Vp + v], 0.0f) << "padded column " << v << " of row " << r << " after the softmax pass";
}

TEST(CudaClassifier, MatchesTheCpuAcrossVocabularySplits) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (long V : {100L, 256L, 1000L}) expect_close(t, 96, 64, V);
}

TEST(CudaClassifier, MatchesTheCpuAtGpt2sVocabulary) {
  expect_close(DType::bf16, 40, 128, 50257);
  expect_close(DType::f32, 40, 128, 50257);
}

/** Plants a NaN in the logits' first element and records what it was shown. */
class PlantingTap final : public ClassifierTap {
 public:
  std::size_t logits_n = 0, grad_n = 0;
  DType logits_t = DType::f32;
  Backend* be = nullptr;
  void logits(void* x, std::size_t n, DType t) override {
    logits_n = n, logits_t = t;
    be->set_element(x, t, 0, NAN);
  }
  void losses(float*, std::size_t) override {}
  void logits_grad(void*, std::size_t n, DType) override { grad_n = n; }
};

TEST(CudaClassifier, ATapSeesUnpaddedRowsAndItsNanReachesOnlyItsTokensLoss) {
  const Case c(16, 64, 1000, DType::bf16, 5);
  BackendOptions o;
  o.compute = DType::bf16;
  cuda::CudaBackend be(o);
  PlantingTap tap;
  tap.be = &be;
  DeviceTensor x(c.x, DType::bf16), w(c.w, DType::bf16), losses(c.N, DType::f32), targets(c.N, DType::f32),
      dx(c.N * c.C, DType::bf16);
  DeviceTensor dw(c.dw0, DType::f32), state(c.N * padded_vocab(c.V), DType::bf16);
  cuda_check(cudaMemcpy(targets.data(), c.targets.data(), sizeof(std::int32_t) * c.N, cudaMemcpyHostToDevice),
             "targets");
  const auto* tg = static_cast<const std::int32_t*>(targets.data());
  be.classifier_forward(state.data(), losses.f32(), x.data(), w.data(), tg, c.N, c.C, c.V, &tap, nullptr);
  be.synchronize();
  EXPECT_EQ(tap.logits_n, static_cast<std::size_t>(c.N * c.V));
  EXPECT_EQ(tap.logits_t, DType::bf16);
  const std::vector<float> l = losses.host();
  EXPECT_TRUE(std::isnan(l[0]));
  for (long i = 1; i < c.N; ++i) EXPECT_TRUE(std::isfinite(l[i])) << "token " << i;
  be.classifier_backward(dx.data(), dw.f32(), state.data(), x.data(), w.data(), tg, c.N, c.C, c.V, 1.0f, &tap);
  be.synchronize();
  EXPECT_EQ(tap.grad_n, static_cast<std::size_t>(c.N * c.V));
}

}  // namespace
}  // namespace fsdp::test
