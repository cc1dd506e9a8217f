// Finite-difference gradient checks, in float64, of every op of the reference path and of the
// whole model: the analytic gradient must match central differences within 1e-6 relative error.
#include <gtest/gtest.h>

#include "fixtures.h"

namespace fsdp {
namespace {

using test::numeric_gradient;
using test::random_vector;
using test::relative_error;
using Vec = std::vector<double>;

constexpr double kTolerance = 1e-6;

/** The objective sum(out * w) for a fixed random w, so d(objective)/d(out) = w. */
double weighted(const Vec& out, const Vec& w) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out[i] * w[i];
  return s;
}

TEST(GradientCheck, Linear) {
  const long N = 3, I = 4, O = 5;
  Vec in = random_vector(N * I, 1), w = random_vector(O * I, 2), b = random_vector(O, 3),
      dout = random_vector(N * O, 4), out(N * O);
  auto f = [&] {
    reference::linear_forward(out.data(), in.data(), w.data(), b.data(), N, I, O);
    return weighted(out, dout);
  };
  Vec din(N * I), dw(O * I, 0.0), db(O, 0.0);
  reference::linear_backward(din.data(), dw.data(), db.data(), dout.data(), in.data(), w.data(), N, I, O);
  EXPECT_LT(relative_error(din, numeric_gradient(in, f)), kTolerance);
  EXPECT_LT(relative_error(dw, numeric_gradient(w, f)), kTolerance);
  EXPECT_LT(relative_error(db, numeric_gradient(b, f)), kTolerance);
}

TEST(GradientCheck, LayerNorm) {
  const long N = 3, C = 6;
  Vec x = random_vector(N * C, 5), w = random_vector(C, 6), b = random_vector(C, 7), dout = random_vector(N * C, 8);
  Vec out(N * C), mean(N), rstd(N);
  auto f = [&] {
    reference::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    return weighted(out, dout);
  };
  f();
  Vec dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  reference::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                                rstd.data(), N, C);
  EXPECT_LT(relative_error(dx, numeric_gradient(x, f)), kTolerance);
  EXPECT_LT(relative_error(dw, numeric_gradient(w, f)), kTolerance);
  EXPECT_LT(relative_error(db, numeric_gradient(b, f)), kTolerance);
}

TEST(GradientCheck, CausalAttention) {
  const long B = 2, T = 4, C = 6, H = 2;
  Vec qkv = random_vector(B * T * 3 * C, 9), dout = random_vector(B * T * C, 10), out(B * T * C), probs(B * H * T * T);
  auto f = [&] {
    reference::attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H);
    return weighted(out, dout);
  };
  f();
  Vec dqkv(B * T * 3 * C);
  reference::attention_backward(dqkv.data(), dout.data(), probs.data(), qkv.data(), B, T, C, H);
  EXPECT_LT(relative_error(dqkv, numeric_gradient(qkv, f)), kTolerance);
}

TEST(GradientCheck, Gelu) {
  Vec x = random_vector(50, 11, 2.0), dout = random_vector(50, 12);
  auto f = [&] {
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += reference::gelu(x[i]) * dout[i];
    return s;
  };
  Vec dx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dx[i] = reference::gelu_grad(x[i]) * dout[i];
  EXPECT_LT(relative_error(dx, numeric_gradient(x, f)), kTolerance);
}

TEST(GradientCheck, SoftmaxCrossEntropy) {
  const long N = 4, V = 7;
  Vec logits = random_vector(N * V, 13, 3.0), probs(N * V), losses(N);
  const std::vector<std::int32_t> targets{0, 6, 3, 3};
  auto f = [&] {
    reference::softmax_xent_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    double s = 0;
    for (double l : losses) s += l;
    return s / N;
  };
  f();
  Vec dlogits(N * V);
  for (long n = 0; n < N; ++n)
    for (long v = 0; v < V; ++v) dlogits[n * V + v] = (probs[n * V + v] - (v == targets[n] ? 1.0 : 0.0)) / N;
  EXPECT_LT(relative_error(dlogits, numeric_gradient(logits, f)), kTolerance);
}

/** Every parameter tensor of the whole model, with the given dropout and head tying. */
void check_whole_model(float dropout, bool tied) {
  const ParamLayout layout = ParamLayout::of(test::small_shape(11, 8, 2, 2, 6, tied));
  reference::Units<double> params = reference::zeros_like<double>(layout);
  for (std::size_t u = 0; u < params.size(); ++u) {
    std::vector<float> init(layout.units[u].numel);
    init_unit_range(layout.units[u], 0, init.size(), init.data(), 3, 0.3, layout.shape.L);
    params[u].assign(init.begin(), init.end());
  }
  const test::RandomTokens tok(2, 5, layout.shape.V, 99);
  reference::Units<double> grads = reference::zeros_like<double>(layout);
  reference::forward_backward(layout, params, tok.tokens(), dropout, 1234, &grads);
  for (std::size_t u = 0; u < params.size(); ++u) {
    for (const auto& seg : layout.units[u].segments) {
      Vec x(params[u].begin() + seg.offset, params[u].begin() + seg.offset + seg.numel);
      auto f = [&] {
        std::copy(x.begin(), x.end(), params[u].begin() + seg.offset);
        return reference::forward_backward<double>(layout, params, tok.tokens(), dropout, 1234, nullptr);
      };
      const Vec numeric = numeric_gradient(x, f);
      std::copy(x.begin(), x.end(), params[u].begin() + seg.offset);
      const Vec analytic(grads[u].begin() + seg.offset, grads[u].begin() + seg.offset + seg.numel);
      EXPECT_LT(relative_error(analytic, numeric), kTolerance) << seg.name;
    }
  }
}

TEST(GradientCheck, WholeModelTied) {
  check_whole_model(0.0f, true);
}
TEST(GradientCheck, WholeModelUntiedWithDropout) {
  check_whole_model(0.2f, false);
}

}  // namespace
}  // namespace fsdp

namespace fsdp {
namespace {

// The check itself must be able to fail: a GELU derivative that forgets the cubic term's
// contribution is off by far more than the tolerance.
TEST(GradientCheck, RejectsAWrongDerivative) {
  std::vector<double> x = test::random_vector(50, 11, 2.0), dout = test::random_vector(50, 12);
  auto f = [&] {
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += reference::gelu(x[i]) * dout[i];
    return s;
  };
  std::vector<double> wrong(x.size());
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double th = std::tanh(k * (x[i] + 0.044715 * x[i] * x[i] * x[i]));
    wrong[i] = (0.5 * (1 + th) + 0.5 * x[i] * (1 - th * th) * k) * dout[i];
  }
  EXPECT_GT(test::relative_error(wrong, test::numeric_gradient(x, f)), 1e-3);
}

}  // namespace
}  // namespace fsdp
