// The fast path (float32, OpenBLAS, OpenMP; backend/cpu and model/) against the reference path
// (float64): each op, then the whole model's logits, loss and gradients, then 10 AdamW steps.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "optim/adamw.h"

namespace fsdp {
namespace {

using test::random_vector;
using test::relative_error;

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

TEST(FastVsReference, LinearForwardAndBackward) {
  CpuBackend be;
  const long N = 37, I = 24, O = 19;
  const auto in = random_vector(N * I, 1), w = random_vector(O * I, 2), b = random_vector(O, 3),
             dout = random_vector(N * O, 4);
  std::vector<double> out(N * O), din(N * I), dw(O * I, 0.0), db(O, 0.0);
  reference::linear_forward(out.data(), in.data(), w.data(), b.data(), N, I, O);
  reference::linear_backward(din.data(), dw.data(), db.data(), dout.data(), in.data(), w.data(), N, I, O);
  auto fin = to_float(in), fw = to_float(w), fb = to_float(b), fdout = to_float(dout);
  std::vector<float> fout(N * O), fdin(N * I), fdw(O * I, 0.0f), fdb(O, 0.0f);
  be.bias_fill(fout.data(), fb.data(), N, O);
  be.gemm(false, true, N, O, I, 1.0f, fin.data(), I, fw.data(), I, 1.0f, fout.data(), O);
  be.gemm(false, false, N, I, O, 1.0f, fdout.data(), O, fw.data(), I, 0.0f, fdin.data(), I);
  be.gemm(true, false, O, I, N, 1.0f, fdout.data(), O, fin.data(), I, 1.0f, fdw.data(), I);
  be.bias_backward(fdb.data(), fdout.data(), N, O);
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(fdin, din), 1e-6);
  EXPECT_LT(relative_error(fdw, dw), 1e-6);
  EXPECT_LT(relative_error(fdb, db), 1e-6);
}

TEST(FastVsReference, LayerNorm) {
  CpuBackend be;
  const long N = 33, C = 40;
  const auto x = random_vector(N * C, 5, 3.0), w = random_vector(C, 6), b = random_vector(C, 7),
             dout = random_vector(N * C, 8);
  std::vector<double> out(N * C), mean(N), rstd(N), dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  reference::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  reference::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                                rstd.data(), N, C);
  auto fx = to_float(x), fw = to_float(w), fb = to_float(b), fdout = to_float(dout);
  std::vector<float> fout(N * C), fmean(N), frstd(N), fdx(N * C, 0.0f), fdw(C, 0.0f), fdb(C, 0.0f);
  be.layernorm_forward(fout.data(), fmean.data(), frstd.data(), fx.data(), fw.data(), fb.data(), N, C);
  be.layernorm_backward(fdx.data(), fdw.data(), fdb.data(), fdout.data(), fx.data(), fw.data(), fmean.data(),
                        frstd.data(), N, C);
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(fdx, dx), 1e-5);
  EXPECT_LT(relative_error(fdw, dw), 1e-5);
  EXPECT_LT(relative_error(fdb, db), 1e-6);
}

TEST(FastVsReference, CausalAttention) {
  CpuBackend be;
  const long B = 3, T = 9, C = 12, H = 3;
  const auto qkv = random_vector(B * T * 3 * C, 9), dout = random_vector(B * T * C, 10);
  std::vector<double> out(B * T * C), probs(B * H * T * T), dqkv(B * T * 3 * C);
  reference::attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H);
  reference::attention_backward(dqkv.data(), dout.data(), probs.data(), qkv.data(), B, T, C, H);
  auto fqkv = to_float(qkv), fdout = to_float(dout);
  std::vector<float> fout(B * T * C), fprobs(B * H * T * T), fdprobs(B * H * T * T), fdqkv(B * T * 3 * C);
  be.attention_probs(fprobs.data(), fqkv.data(), B, T, C, H);
  be.attention_values(fout.data(), fprobs.data(), fqkv.data(), B, T, C, H);
  be.attention_values_backward(fdprobs.data(), fdqkv.data(), fdout.data(), fprobs.data(), fqkv.data(), B, T, C, H);
  be.attention_probs_backward(fdqkv.data(), fdprobs.data(), fprobs.data(), fqkv.data(), B, T, C, H);
  EXPECT_LT(relative_error(fprobs, probs), 1e-6);
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(fdqkv, dqkv), 1e-5);
}

TEST(FastVsReference, GeluAndSoftmaxCrossEntropy) {
  CpuBackend be;
  const auto x = random_vector(300, 11, 3.0);
  auto fx = to_float(x);
  std::vector<float> fy(300), fd(300, 1.0f);
  be.gelu_forward(fy.data(), fx.data(), 300);
  be.gelu_backward(fd.data(), fx.data(), 300);
  std::vector<double> y(300), d(300);
  for (int i = 0; i < 300; ++i) y[i] = reference::gelu(x[i]), d[i] = reference::gelu_grad(x[i]);
  EXPECT_LT(relative_error(fy, y), 1e-6);
  EXPECT_LT(relative_error(fd, d), 1e-6);

  const long N = 6, V = 50;
  const auto logits = random_vector(N * V, 12, 4.0);
  const std::vector<std::int32_t> targets{0, 49, 7, 7, 3, 20};
  std::vector<double> probs(N * V), losses(N);
  reference::softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  auto flogits = to_float(logits);
  std::vector<float> flosses(N);
  be.softmax_xent_forward(flosses.data(), flogits.data(), targets.data(), N, V);
  EXPECT_LT(relative_error(flosses, losses), 1e-6);
  EXPECT_LT(relative_error(flogits, probs), 1e-6);
}

/** Runs `steps` optimizer steps on both paths from the same start and compares each step's loss. */
void compare_training(const ModelShape& shape, float dropout, int steps) {
  test::FastModel fast(shape, dropout, {}, 11, 0.1);
  auto params = fast.params_as<double>();
  auto m = reference::zeros_like<double>(fast.layout), v = reference::zeros_like<double>(fast.layout);
  TrainingConfig t;
  t.weight_decay = 0.1, t.layer_lr_decay = 0.8;
  AdamW adamw(fast.be, fast.layout, t);
  const double lr = 3e-3;
  for (int step = 1; step <= steps; ++step) {
    const test::RandomTokens tok(4, 16, shape.V, 100 + step);
    const std::uint64_t key = 555 + step;
    if (step == 1) {
      std::vector<float> logits(4 * 16 * shape.V);
      std::vector<double> ref_logits;
      fast.gpt->evaluate(tok.batch(), logits.data());
      reference::forward_backward<double>(fast.layout, params, tok.tokens(), 0.0f, 0, nullptr, 1.0, &ref_logits);
      EXPECT_LT(relative_error(logits, ref_logits), 1e-5) << "logits";
    }
    fast.state->zero_grads();
    const double fast_loss = fast.gpt->forward_backward(tok.batch(), 1.0f, key);
    auto grads = reference::zeros_like<double>(fast.layout);
    const double ref_loss = reference::forward_backward(fast.layout, params, tok.tokens(), dropout, key, &grads);
    EXPECT_LT(std::fabs(fast_loss - ref_loss) / ref_loss, 1e-5) << "loss at step " << step;
    if (step == 1) {
      const auto fast_grads = fast.grads_as_double();
      for (std::size_t u = 0; u < grads.size(); ++u)
        EXPECT_LT(relative_error(fast_grads[u], grads[u]), 1e-4) << fast.layout.units[u].name;
    }
    ASSERT_FALSE(adamw.step(*fast.state, step, lr, 1.0f, 1.0).has_value());
    reference::adamw_step(fast.layout, params, grads, m, v, step, lr, t.beta1, t.beta2, t.eps, t.weight_decay,
                          t.layer_lr_decay, 1.0);
  }
}

TEST(FastVsReference, TenOptimizerStepsTied) {
  compare_training(test::small_shape(64, 32, 2, 4, 16, true), 0.0f, 10);
}
TEST(FastVsReference, TenOptimizerStepsUntiedWithDropout) {
  compare_training(test::small_shape(64, 32, 2, 4, 16, false), 0.1f, 10);
}

}  // namespace
}  // namespace fsdp
