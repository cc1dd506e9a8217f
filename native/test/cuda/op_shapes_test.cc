// Every layer operation of the CUDA backend against the CPU backend's, one operation at a time, at
// the shapes users run: head sizes 32, 64 and 128, and lengths that are not a multiple of any
// kernel's tile (T = 1, 31, 33, 65, 127, 129; rows N = B·T likewise). In float32 (TF32 off) the
// two agree to float32 rounding (relative 1e-5). In bfloat16 and float16 both sides get the same
// 16-bit inputs; the CPU computes in float32 and its result is rounded to the 16-bit type, as the
// kernels round their outputs: they may differ by the output rounding only, so the bound is the
// type's unit roundoff u (2^-8, 2^-11) in relative L2 times the roundings the operation makes
// (../rounding_budget.h, which the model parity test composes) — 2u for attention, whose kernels may round
// a probability tile on the way (tensor cores; every 16-bit attention call must have run there).
// An indexing bug, a missed row or a wrong mask is orders of magnitude beyond.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/kernels.h"
#include "fixtures.h"
#include "rounding_budget.h"
#include "runtime/half.h"
#include "runtime/rng.h"

namespace fsdp::test {
namespace {

const long kHeadSizes[] = {32, 64, 128};
const long kLengths[] = {1, 31, 33, 65, 127, 129};

// The roundings each operation makes (rounding_budget.h: the model parity test composes the same factors).
double tolerance(DType t, double factor = 1.0) {
  return t == DType::f32 ? 1e-5 : factor * rounding::unit_roundoff(t);
}

/** x rounded to t and back (what both sides see of a t tensor). */
float as(DType t, float x) {
  return t == DType::bf16 ? bf16_to_float(float_to_bf16(x)) : t == DType::f16 ? f16_to_float(float_to_f16(x)) : x;
}
std::vector<float> rounded(DType t, std::vector<float> v) {
  for (float& x : v) x = as(t, x);
  return v;
}

std::vector<float> random(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  const CounterRng rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(rng.normal(i));
  return v;
}

/** The GPU side: a CUDA backend computing in t, and tensors moved to and from it. */
struct Gpu {
  DType t;
  std::unique_ptr<Backend> be;
  std::vector<Buffer> held;
  explicit Gpu(DType dtype) : t(dtype) {
    BackendOptions o;
    o.compute = dtype;
    o.tf32 = false;
    be = make_backend("cuda", o);
  }
  /** values (already representable in `as`) as a device tensor of dtype `as`. */
  void* put(const std::vector<float>& values, DType as_type) {
    held.push_back(be->allocator().allocate(MemoryCategory::other, sizeof(float) * values.size() + 16));
    Buffer f32 = be->allocator().allocate(MemoryCategory::other, sizeof(float) * values.size() + 16);
    be->upload(f32.data(), values.data(), sizeof(float) * values.size());
    be->from_f32(held.back().data(), as_type, f32.f32(), values.size());
    be->synchronize();
    return held.back().data();
  }
  void* put(const std::vector<float>& values) { return put(values, t); }
  float* put_f32(const std::vector<float>& values) { return static_cast<float*>(put(values, DType::f32)); }
  std::int32_t* put_ids(const std::vector<std::int32_t>& ids) {
    held.push_back(be->allocator().allocate(MemoryCategory::other, sizeof(std::int32_t) * ids.size() + 16));
    be->upload(held.back().data(), ids.data(), sizeof(std::int32_t) * ids.size());
    return held.back().i32();
  }
  void* zeros(std::size_t n, DType as_type) { return put(std::vector<float>(n, 0.0f), as_type); }
  std::vector<float> get(const void* p, std::size_t n, DType as_type) {
    be->synchronize();
    return be->to_host_f32(p, as_type, n);
  }
  std::vector<float> get(const void* p, std::size_t n) { return get(p, n, t); }
};

/** The CPU's float32 result as the GPU's t tensor would hold it (its output rounded once). */
void expect_close(DType t, const std::vector<float>& cpu, const std::vector<float>& gpu, double factor,
                  const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  const double err = relative_error(rounded(t, cpu), gpu);
  EXPECT_LE(err, tolerance(t, factor)) << what << " (" << dtype_name(t) << "): relative error " << err;
}

class OpShapes : public ::testing::TestWithParam<DType> {};

TEST_P(OpShapes, AttentionForwardAndBackwardAtEveryHeadSizeAndRaggedLength) {
  const DType t = GetParam();
  CpuBackend cpu;
  Gpu gpu(t);
  for (long hs : kHeadSizes) {
    for (long T : kLengths) {
      const long B = 2, H = 2, C = hs * H, N = B * T;
      const std::string at = "head size " + std::to_string(hs) + ", T " + std::to_string(T);
      const auto qkv = rounded(t, random(static_cast<std::size_t>(N * 3 * C), 11 + T * hs, 0.5f));
      const auto dy = rounded(t, random(static_cast<std::size_t>(N * C), 12 + T * hs));
      std::vector<float> y(N * C), state(cpu.attention_state_size(B, T, H)),
          scratch(cpu.attention_scratch_size(B, T, H)), dqkv(N * 3 * C);
      cpu.attention_forward(y.data(), state.data(), qkv.data(), B, T, C, H, nullptr);
      // Backward from the rounded forward output, as the GPU's backward reads its own t output.
      const auto y_t = rounded(t, y);
      cpu.attention_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), y_t.data(), state.data(), B, T, C, H,
                             nullptr);

      void* g_qkv = gpu.put(qkv);
      void* g_y = gpu.zeros(y.size(), t);
      float* g_state = static_cast<float*>(gpu.zeros(gpu.be->attention_state_size(B, T, H), DType::f32));
      float* g_scratch = static_cast<float*>(gpu.zeros(gpu.be->attention_scratch_size(B, T, H), DType::f32));
      void* g_dqkv = gpu.zeros(dqkv.size(), t);
      const cuda::AttentionCalls before = cuda::attention_calls();
      gpu.be->attention_forward(g_y, g_state, g_qkv, B, T, C, H, nullptr);
      expect_close(t, y, gpu.get(g_y, y.size()), rounding::kRoundings::attention, "attention forward, " + at);
      gpu.be->attention_backward(g_dqkv, g_scratch, gpu.put(dy), g_qkv, g_y, g_state, B, T, C, H, nullptr);
      expect_close(t, dqkv, gpu.get(g_dqkv, dqkv.size()), rounding::kRoundings::attention_backward,
                   "attention backward, " + at);
      // The state alone, recomputed (selective checkpointing), is the forward's.
      float* again = static_cast<float*>(gpu.zeros(gpu.be->attention_state_size(B, T, H), DType::f32));
      gpu.be->attention_state(again, g_qkv, B, T, C, H);
      EXPECT_EQ(gpu.get(again, gpu.be->attention_state_size(B, T, H), DType::f32),
                gpu.get(g_state, gpu.be->attention_state_size(B, T, H), DType::f32))
          << at;
      // Forward, backward and the state: on tensor cores in bfloat16/float16, never a silent fallback.
      const cuda::AttentionCalls after = cuda::attention_calls();
      EXPECT_EQ(after.tensor_cores - before.tensor_cores, t == DType::f32 ? 0u : 3u) << at;
      EXPECT_EQ(after.cuda_cores - before.cuda_cores, t == DType::f32 ? 3u : 0u) << at;
      gpu.held.clear();
    }
  }
}

TEST_P(OpShapes, LinearLayersAtRaggedRowCounts) {
  const DType t = GetParam();
  CpuBackend cpu;
  Gpu gpu(t);
  for (long T : kLengths) {
    const long N = 3 * T, I = 96, O = 160;
    const std::string at = "N " + std::to_string(N);
    const auto in = rounded(t, random(N * I, 21 + T)), w = rounded(t, random(O * I, 22 + T, 0.1f)),
               b = rounded(t, random(O, 23 + T, 0.1f));
    const auto dout = rounded(t, random(N * O, 24 + T));
    std::vector<float> out(N * O), h(N * O), g(N * O), din(N * I), dw(O * I, 0.0f), db(O, 0.0f);
    cpu.linear_forward(out.data(), DType::f32, in.data(), w.data(), b.data(), N, I, O);
    cpu.linear_gelu_forward(g.data(), h.data(), in.data(), w.data(), b.data(), N, I, O);
    cpu.linear_backward(din.data(), false, dw.data(), db.data(), dout.data(), DType::f32, in.data(), w.data(), N, I, O);

    void *g_in = gpu.put(in), *g_w = gpu.put(w), *g_b = gpu.put(b), *g_out = gpu.zeros(out.size(), t),
         *g_h = gpu.zeros(h.size(), t), *g_g = gpu.zeros(g.size(), t);
    gpu.be->linear_forward(g_out, t, g_in, g_w, g_b, N, I, O);
    expect_close(t, out, gpu.get(g_out, out.size()), rounding::kRoundings::linear, "linear forward, " + at);
    gpu.be->linear_gelu_forward(g_g, g_h, g_in, g_w, g_b, N, I, O);
    expect_close(t, h, gpu.get(g_h, h.size()), rounding::kRoundings::linear, "linear+GELU pre-activation, " + at);
    // GELU of a pre-activation the GPU may have kept in float32 inside its epilogue: one rounding more.
    expect_close(t, g, gpu.get(g_g, g.size()), rounding::kRoundings::linear_gelu, "linear+GELU, " + at);
    void* g_din = gpu.zeros(din.size(), t);
    float *g_dw = gpu.put_f32(std::vector<float>(dw.size(), 0.0f)),
          *g_db = gpu.put_f32(std::vector<float>(db.size(), 0.0f));
    gpu.be->linear_backward(g_din, false, g_dw, g_db, gpu.put(dout), t, g_in, g_w, N, I, O);
    expect_close(t, din, gpu.get(g_din, din.size()), rounding::kRoundings::linear_backward,
                 "linear backward dx, " + at);
    // Weight and bias gradients are float32 accumulators: only the inputs were rounded.
    EXPECT_LE(relative_error(dw, gpu.get(g_dw, dw.size(), DType::f32)),
              tolerance(DType::f32, 1.0) + (t == DType::f32 ? 0 : 1e-6))
        << "dw, " << at;
    EXPECT_LE(relative_error(db, gpu.get(g_db, db.size(), DType::f32)), 1e-5) << "db, " << at;
    gpu.held.clear();
  }
}

TEST_P(OpShapes, LayerNormAndResidualAtRaggedRowCounts) {
  const DType t = GetParam();
  CpuBackend cpu;
  Gpu gpu(t);
  for (long T : kLengths) {
    for (long C : {64L, 192L, 768L}) {
      const long N = 2 * T;
      const std::string at = "N " + std::to_string(N) + ", C " + std::to_string(C);
      const auto x = rounded(t, random(N * C, 31 + T + C)), w = rounded(t, random(C, 32 + C, 0.2f)),
                 b = rounded(t, random(C, 33 + C, 0.2f));
      const auto res = rounded(t, random(N * C, 34 + T + C)), dout = rounded(t, random(N * C, 35 + T + C));
      std::vector<float> out(N * C), mean(N), rstd(N), dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f), sum(N * C),
          out2(N * C), mean2(N), rstd2(N);
      cpu.layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
      cpu.layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(),
                             N, C);
      cpu.residual_layernorm_forward(sum.data(), out2.data(), mean2.data(), rstd2.data(), res.data(), x.data(), 0.1f,
                                     77, w.data(), b.data(), N, C);

      void *g_x = gpu.put(x), *g_w = gpu.put(w), *g_b = gpu.put(b), *g_out = gpu.zeros(out.size(), t);
      float *g_mean = gpu.put_f32(mean), *g_rstd = gpu.put_f32(rstd);
      gpu.be->layernorm_forward(g_out, g_mean, g_rstd, g_x, g_w, g_b, N, C);
      expect_close(t, out, gpu.get(g_out, out.size()), rounding::kRoundings::layernorm, "layernorm forward, " + at);
      EXPECT_LE(relative_error(rstd, gpu.get(g_rstd, N, DType::f32)), 1e-5) << "rstd, " << at;
      void* g_dx = gpu.zeros(dx.size(), t);
      // Fresh zeros: layernorm_backward adds into dw/db, and the CPU's dw/db hold its result by now.
      float *g_dw = gpu.put_f32(std::vector<float>(C, 0.0f)), *g_db = gpu.put_f32(std::vector<float>(C, 0.0f));
      gpu.be->layernorm_backward(g_dx, g_dw, g_db, gpu.put(dout), g_x, g_w, g_mean, g_rstd, N, C);
      expect_close(t, dx, gpu.get(g_dx, dx.size()), rounding::kRoundings::layernorm_backward,
                   "layernorm backward dx, " + at);
      EXPECT_LE(relative_error(dw, gpu.get(g_dw, C, DType::f32)), 1e-5) << "layernorm dw, " << at;
      void *g_sum = gpu.zeros(sum.size(), t), *g_out2 = gpu.zeros(out2.size(), t);
      float *g_mean2 = gpu.put_f32(mean2), *g_rstd2 = gpu.put_f32(rstd2);
      gpu.be->residual_layernorm_forward(g_sum, g_out2, g_mean2, g_rstd2, gpu.put(res), g_x, 0.1f, 77, g_w, g_b, N, C);
      expect_close(t, sum, gpu.get(g_sum, sum.size()), rounding::kRoundings::residual,
                   "residual + dropout (same masks), " + at);
      // The normalised sum is of the t-rounded sum on the GPU: one rounding more.
      expect_close(t, out2, gpu.get(g_out2, out2.size()), rounding::kRoundings::residual_layernorm,
                   "residual layernorm, " + at);
      gpu.held.clear();
    }
  }
}

TEST_P(OpShapes, GeluDropoutSoftmaxCrossEntropyAndEmbeddingAtRaggedLengths) {
  const DType t = GetParam();
  CpuBackend cpu;
  Gpu gpu(t);
  for (long T : kLengths) {
    const long B = 2, N = B * T, C = 96, V = 1000, S = 200;
    const std::string at = "T " + std::to_string(T);
    const auto x = rounded(t, random(N * C, 41 + T));
    std::vector<float> g(N * C), d = rounded(t, random(N * C, 42 + T)), drop(N * C);
    cpu.gelu_forward(g.data(), x.data(), g.size());
    void* g_x = gpu.put(x);
    void* g_g = gpu.zeros(g.size(), t);
    gpu.be->gelu_forward(g_g, g_x, g.size());
    expect_close(t, g, gpu.get(g_g, g.size()), rounding::kRoundings::gelu, "GELU, " + at);
    void* g_d = gpu.put(d);
    cpu.gelu_backward(d.data(), x.data(), d.size());
    gpu.be->gelu_backward(g_d, g_x, d.size());
    expect_close(t, d, gpu.get(g_d, d.size()), rounding::kRoundings::gelu_backward, "GELU backward, " + at);
    cpu.dropout(drop.data(), x.data(), drop.size(), 0.2f, 99);
    void* g_drop = gpu.zeros(drop.size(), t);
    gpu.be->dropout(g_drop, g_x, drop.size(), 0.2f, 99);
    expect_close(t, drop, gpu.get(g_drop, drop.size()), rounding::kRoundings::dropout,
                 "dropout (the same masks), " + at);

    // Softmax cross-entropy on float32 logits, every target position.
    auto logits = random(N * V, 43 + T, 2.0f);
    std::vector<std::int32_t> targets(N);
    for (long i = 0; i < N; ++i) targets[i] = static_cast<std::int32_t>((i * 37 + T) % V);
    std::vector<float> losses(N);
    float* g_logits = gpu.put_f32(logits);
    std::int32_t* g_targets = gpu.put_ids(targets);
    float* g_losses = gpu.put_f32(losses);
    cpu.softmax_xent_forward(losses.data(), logits.data(), targets.data(), N, V);
    gpu.be->softmax_xent_forward(g_losses, g_logits, g_targets, N, V);
    EXPECT_LE(relative_error(losses, gpu.get(g_losses, N, DType::f32)), 1e-5) << "cross-entropy losses, " << at;
    cpu.softmax_xent_backward(logits.data(), targets.data(), N, V, 0.5f);
    gpu.be->softmax_xent_backward(g_logits, g_targets, N, V, 0.5f);
    EXPECT_LE(relative_error(logits, gpu.get(g_logits, logits.size(), DType::f32)), 1e-5)
        << "cross-entropy backward, " << at;

    // Embeddings: tokens repeat (several positions add into one row of dwte, in position order).
    const auto wte = rounded(t, random(V * C, 44, 0.1f)), wpe = rounded(t, random(S * C, 45, 0.1f));
    std::vector<std::int32_t> tokens(N);
    for (long i = 0; i < N; ++i) tokens[i] = static_cast<std::int32_t>((i * i + 3) % 17);
    std::vector<float> emb(N * C), dwte(V * C, 0.0f), dwpe(S * C, 0.0f);
    cpu.embedding_forward(emb.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    std::int32_t* g_tokens = gpu.put_ids(tokens);
    void* g_emb = gpu.zeros(emb.size(), t);
    gpu.be->embedding_forward(g_emb, g_tokens, gpu.put(wte), gpu.put(wpe), B, T, C);
    expect_close(t, emb, gpu.get(g_emb, emb.size()), rounding::kRoundings::embedding, "embedding forward, " + at);
    const auto demb = rounded(t, random(N * C, 46 + T));
    cpu.embedding_backward(dwte.data(), dwpe.data(), demb.data(), tokens.data(), B, T, C);
    float *g_dwte = gpu.put_f32(std::vector<float>(dwte.size(), 0.0f)),
          *g_dwpe = gpu.put_f32(std::vector<float>(dwpe.size(), 0.0f));
    gpu.be->embedding_backward(g_dwte, g_dwpe, gpu.put(demb), g_tokens, B, T, C);
    EXPECT_LE(relative_error(dwte, gpu.get(g_dwte, dwte.size(), DType::f32)), 1e-6) << "dwte, " << at;
    EXPECT_LE(relative_error(dwpe, gpu.get(g_dwpe, dwpe.size(), DType::f32)), 1e-6) << "dwpe, " << at;
    gpu.held.clear();
  }
}

TEST_P(OpShapes, AdamWAndReductionsAtRaggedLengths) {
  const DType t = GetParam();
  CpuBackend cpu;
  Gpu gpu(t);
  for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{100003}}) {
    auto p = random(n, 51 + n), g = random(n, 52 + n, 0.01f), m = random(n, 53 + n, 0.001f),
         v = random(n, 54 + n, 0.0f);
    for (float& x : v) x = 1e-6f;
    float *gp = gpu.put_f32(p), *gg = gpu.put_f32(g), *gm = gpu.put_f32(m), *gv = gpu.put_f32(v);
    AdamWArgs a{p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 0.1f, 0.05f, -1};
    AdamWArgs ga{gp, gg, gm, gv, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 0.1f, 0.05f, -1};
    cpu.adamw_apply(a);
    gpu.be->adamw_apply(ga);
    EXPECT_LE(relative_error(p, gpu.get(gp, n, DType::f32)), 1e-6) << "adamw params, n " << n;
    EXPECT_LE(relative_error(v, gpu.get(gv, n, DType::f32)), 1e-6) << "adamw v, n " << n;
    EXPECT_NEAR(cpu.sum_squares(g.data(), n), gpu.be->sum_squares(gg, n), 1e-9 * cpu.sum_squares(g.data(), n))
        << "sum of squares, n " << n;
    gpu.held.clear();
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OpShapes, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace fsdp::test
