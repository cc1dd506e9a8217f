// The CUDA backend's other kernels, op by op, against the CPU backend on the same inputs (rounded
// to the compute dtype first, so the difference is the kernel's): LayerNorm forward and backward
// (row widths that take the vector path and ones that do not), the fused residual + dropout +
// LayerNorm, GELU, dropout, the linear layers (bias and GELU epilogues, bias gradient), the
// embeddings, AdamW, and the reductions. float32 within 1e-5 of the CPU, bfloat16 within 1e-2.
// GPU machines only; attention and the classifier have their own files.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention_case.h"  // scaled_error
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "device_buffer.h"
#include "half_rounding.h"
#include "runtime/rng.h"

namespace fsdp::test {
namespace {

std::vector<float> random(std::size_t n, std::uint64_t seed, DType t, float lo = -1, float hi = 1) {
  const CounterRng rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float x = lo + (hi - lo) * rng.uniform(i);
    v[i] = t == DType::bf16 ? round_bf16(x) : x;
  }
  return v;
}

double tolerance(DType t) {
  return t == DType::f32 ? 1e-5 : 1e-2;
}

/** The GPU backend in a compute dtype beside the CPU one. */
struct Backends {
  CpuBackend cpu;
  std::unique_ptr<cuda::CudaBackend> gpu;
  DType t;
  explicit Backends(DType dtype) : t(dtype) {
    BackendOptions o;
    o.compute = dtype;
    gpu = std::make_unique<cuda::CudaBackend>(o);
  }
  std::vector<float> host(const DeviceTensor& d) {
    gpu->synchronize();
    return d.host();
  }
};

class BackendOps : public ::testing::TestWithParam<DType> {};

TEST_P(BackendOps, LayerNormForwardAndBackward) {
  for (long C : {768L, 100L}) {
    Backends b(GetParam());
    const DType t = b.t;
    const long N = 300;
    const auto x = random(N * C, 1, t, -3, 3), w = random(C, 2, t, 0.5, 1.5), bias = random(C, 3, t),
               dout = random(N * C, 4, t), dx0 = random(N * C, 5, t);
    std::vector<float> out(N * C), mean(N), rstd(N), dx(dx0), dw(C, 0.25f), db(C, -0.5f);
    b.cpu.layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), N, C);
    b.cpu.layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(),
                             N, C);
    DeviceTensor gx(x, t), gw(w, t), gb(bias, t), gout(N * C, t), gmean(N, DType::f32), grstd(N, DType::f32),
        gdout(dout, t), gdx(dx0, t);
    DeviceTensor gdw(std::vector<float>(C, 0.25f), DType::f32), gdb(std::vector<float>(C, -0.5f), DType::f32);
    b.gpu->layernorm_forward(gout.data(), gmean.f32(), grstd.f32(), gx.data(), gw.data(), gb.data(), N, C);
    b.gpu->layernorm_backward(gdx.data(), gdw.f32(), gdb.f32(), gdout.data(), gx.data(), gw.data(), gmean.f32(),
                              grstd.f32(), N, C);
    SCOPED_TRACE("C " + std::to_string(C));
    EXPECT_LE(scaled_error(b.host(gout), out), tolerance(t)) << "out";
    EXPECT_LE(scaled_error(b.host(gmean), mean), 1e-5) << "mean";
    EXPECT_LE(scaled_error(b.host(grstd), rstd), 1e-5) << "rstd";
    EXPECT_LE(scaled_error(b.host(gdx), dx), tolerance(t)) << "dx";
    EXPECT_LE(scaled_error(b.host(gdw), dw), tolerance(t)) << "dw";
    EXPECT_LE(scaled_error(b.host(gdb), db), tolerance(t)) << "db";
  }
}

TEST_P(BackendOps, ResidualDropoutLayerNormMasksAsTheCpu) {
  Backends b(GetParam());
  const DType t = b.t;
  const long N = 64, C = 256;
  const auto r = random(N * C, 10, t), x = random(N * C, 11, t), w = random(C, 12, t, 0.5, 1.5),
             bias = random(C, 13, t);
  std::vector<float> sum(N * C), out(N * C), mean(N), rstd(N);
  b.cpu.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), r.data(), x.data(), 0.1f, 77,
                                   w.data(), bias.data(), N, C);
  DeviceTensor gr(r, t), gx(x, t), gw(w, t), gb(bias, t), gsum(N * C, t), gout(N * C, t), gmean(N, DType::f32),
      grstd(N, DType::f32);
  b.gpu->residual_layernorm_forward(gsum.data(), gout.data(), gmean.f32(), grstd.f32(), gr.data(), gx.data(), 0.1f, 77,
                                    gw.data(), gb.data(), N, C);
  EXPECT_LE(scaled_error(b.host(gsum), sum), tolerance(t)) << "sum";
  EXPECT_LE(scaled_error(b.host(gout), out), tolerance(t)) << "out";
}

TEST_P(BackendOps, GeluAndDropoutOnVectorAndScalarLengths) {
  for (std::size_t n : {4096UL, 1001UL}) {
    Backends b(GetParam());
    const DType t = b.t;
    const auto x = random(n, 20, t, -4, 4), d = random(n, 21, t), r = random(n, 22, t);
    std::vector<float> g(n), dg(d), dr(n), dp(n);
    b.cpu.gelu_forward(g.data(), x.data(), n);
    b.cpu.gelu_backward(dg.data(), x.data(), n);
    b.cpu.dropout_residual(dr.data(), r.data(), x.data(), n, 0.2f, 5);
    b.cpu.dropout(dp.data(), x.data(), n, 0.3f, 6);
    DeviceTensor gx(x, t), gg(n, t), gd(d, t), gr(r, t), gdr(n, t), gdp(n, t);
    b.gpu->gelu_forward(gg.data(), gx.data(), n);
    b.gpu->gelu_backward(gd.data(), gx.data(), n);
    b.gpu->dropout_residual(gdr.data(), gr.data(), gx.data(), n, 0.2f, 5);
    b.gpu->dropout(gdp.data(), gx.data(), n, 0.3f, 6);
    SCOPED_TRACE("n " + std::to_string(n));
    EXPECT_LE(scaled_error(b.host(gg), g), tolerance(t)) << "gelu";
    EXPECT_LE(scaled_error(b.host(gd), dg), tolerance(t)) << "gelu backward";
    EXPECT_LE(scaled_error(b.host(gdr), dr), tolerance(t)) << "dropout + residual";
    EXPECT_LE(scaled_error(b.host(gdp), dp), tolerance(t)) << "dropout";
  }
}

TEST_P(BackendOps, LinearLayersWithBiasAndGeluEpilogues) {
  Backends b(GetParam());
  const DType t = b.t;
  const long N = 200, I = 256, O = 384;
  const auto x = random(N * I, 30, t), w = random(O * I, 31, t, -0.1, 0.1), bias = random(O, 32, t),
             dout = random(N * O, 33, t);
  std::vector<float> y(N * O), g(N * O), h(N * O), din(N * I), dw(O * I, 0.0f), db(O, 0.0f);
  b.cpu.linear_forward(y.data(), DType::f32, x.data(), w.data(), bias.data(), N, I, O);
  b.cpu.linear_gelu_forward(g.data(), h.data(), x.data(), w.data(), bias.data(), N, I, O);
  b.cpu.linear_backward(din.data(), false, dw.data(), db.data(), dout.data(), DType::f32, x.data(), w.data(), N, I, O);
  DeviceTensor gx(x, t), gw(w, t), gb(bias, t), gy(N * O, t), gg(N * O, t), gh(N * O, t), gdout(dout, t),
      gdin(N * I, t);
  DeviceTensor gdw(std::vector<float>(O * I, 0.0f), DType::f32), gdb(std::vector<float>(O, 0.0f), DType::f32);
  b.gpu->linear_forward(gy.data(), t, gx.data(), gw.data(), gb.data(), N, I, O);
  b.gpu->linear_gelu_forward(gg.data(), gh.data(), gx.data(), gw.data(), gb.data(), N, I, O);
  b.gpu->linear_backward(gdin.data(), false, gdw.f32(), gdb.f32(), gdout.data(), t, gx.data(), gw.data(), N, I, O);
  const double tol = t == DType::f32 ? 1e-5 : 2e-2;  // bfloat16: products of 256 rounded terms
  EXPECT_LE(scaled_error(b.host(gy), y), tol) << "linear";
  EXPECT_LE(scaled_error(b.host(gh), h), tol) << "pre-GELU";
  EXPECT_LE(scaled_error(b.host(gg), g), tol) << "GELU";
  EXPECT_LE(scaled_error(b.host(gdin), din), tol) << "din";
  EXPECT_LE(scaled_error(b.host(gdw), dw), tol) << "dw";
  EXPECT_LE(scaled_error(b.host(gdb), db), tol) << "db";
}

TEST_P(BackendOps, EmbeddingsForwardAndBackward) {
  Backends b(GetParam());
  const DType t = b.t;
  const long B = 3, T = 50, C = 64, V = 40;
  std::vector<std::int32_t> tokens(B * T);
  for (long i = 0; i < B * T; ++i)
    tokens[i] = static_cast<std::int32_t>((i * 7) % V);  // repeated ids: dwte sums several positions
  const auto wte = random(V * C, 40, t), wpe = random(T * C, 41, t), dout = random(B * T * C, 42, t);
  std::vector<float> out(B * T * C), dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  b.cpu.embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  b.cpu.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
  DeviceTensor gtok(B * T, DType::f32), gwte(wte, t), gwpe(wpe, t), gout(B * T * C, t), gdout(dout, t);
  DeviceTensor gdwte(std::vector<float>(V * C, 0.0f), DType::f32), gdwpe(std::vector<float>(T * C, 0.0f), DType::f32);
  cuda_check(cudaMemcpy(gtok.data(), tokens.data(), sizeof(std::int32_t) * B * T, cudaMemcpyHostToDevice), "tokens");
  const auto* tok = static_cast<const std::int32_t*>(gtok.data());
  b.gpu->embedding_forward(gout.data(), tok, gwte.data(), gwpe.data(), B, T, C);
  b.gpu->embedding_backward(gdwte.f32(), gdwpe.f32(), gdout.data(), tok, B, T, C);
  EXPECT_LE(scaled_error(b.host(gout), out), tolerance(t)) << "embedding";
  EXPECT_LE(scaled_error(b.host(gdwte), dwte), tolerance(t)) << "dwte";
  EXPECT_LE(scaled_error(b.host(gdwpe), dwpe), tolerance(t)) << "dwpe";
}

TEST_P(BackendOps, AdamWAndReductions) {
  Backends b(GetParam());
  const std::size_t n = 10007;
  auto p = random(n, 50, DType::f32), g = random(n, 51, DType::f32), m = random(n, 52, DType::f32, 0, 0.1),
       v = random(n, 53, DType::f32, 0, 0.01);
  AdamWArgs a{p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 0.1f, 0.05f};
  DeviceTensor gp(p, DType::f32), gg(g, DType::f32), gm(m, DType::f32), gv(v, DType::f32);
  AdamWArgs ga = a;
  ga.params = gp.f32(), ga.grads = gg.f32(), ga.m = gm.f32(), ga.v = gv.f32();
  EXPECT_EQ(b.cpu.adamw_check(a), 0u);
  EXPECT_EQ(b.gpu->adamw_check(ga), 0u);
  b.cpu.adamw_apply(a);
  b.gpu->adamw_apply(ga);
  EXPECT_LE(scaled_error(b.host(gp), p), 1e-6) << "params";
  EXPECT_LE(scaled_error(b.host(gm), m), 1e-6) << "m";
  EXPECT_LE(scaled_error(b.host(gv), v), 1e-6) << "v";
  EXPECT_NEAR(b.gpu->sum(gg.f32(), n), b.cpu.sum(g.data(), n), 1e-9 * n);
  EXPECT_NEAR(b.gpu->sum_squares(gg.f32(), n), b.cpu.sum_squares(g.data(), n), 1e-9 * n);
  g[17] = NAN;
  gg.upload(g);
  const TensorStats c = b.cpu.stats(g.data(), n), d = b.gpu->stats(gg.f32(), n);
  EXPECT_EQ(c.nonfinite, 1u);
  EXPECT_EQ(d.nonfinite, 1u);
  EXPECT_NEAR(d.mean, c.mean, 1e-9);
  EXPECT_NEAR(d.max_abs, c.max_abs, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BackendOps, ::testing::Values(DType::f32, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace fsdp::test
