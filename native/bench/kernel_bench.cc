// Micro-benchmark of the CUDA backend's kernels (`npm run bench:gpu -- --kernels`): each kernel
// timed with CUDA events at the shapes of GPT-2 124M and 355M (16 384 tokens a call, sequences of
// 1024 and 2048, bfloat16), printed with its achieved TFLOP/s next to cuBLASLt's for the same sizes
// — or, for kernels that move memory rather than multiply, its GB/s next to a device-to-device copy
// of the same bytes. Writes the table as JSON with --json PATH.
//
// FLOPs: causal attention counts the half it computes (as model/flops.h): forward 2 products of
// 2 T^2/2 D per head = 2 B H T^2 D, backward 2.5x that (FlashAttention's convention; the kernels do
// 3.5x, recomputing S and dP for dQ). cuBLASLt's reference is the full Q K^T product of every head
// as one strided batch: also 2 B H T^2 D, so the two TFLOP/s compare directly.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/padded_vocab.h"
#include "runtime/rng.h"

namespace fsdp::bench {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/**
 * A device array of uniform values in [lo, hi): a million counter-based draws, repeated to fill
 * it (timings do not depend on the values' pattern, and drawing hundreds of millions would not
 * fit the benchmark's time), cast to its dtype on the device.
 */
class Array {
 public:
  Array(std::size_t n, DType t, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f, cudaStream_t s = nullptr)
      : bytes_(n * dtype_bytes(t)) {
    check(cudaMalloc(&p_, bytes_), "cudaMalloc");
    const std::size_t block = std::min<std::size_t>(n, 1u << 20);
    std::vector<float> host(block);
    const CounterRng rng(seed);
    for (std::size_t i = 0; i < block; ++i) host[i] = lo + (hi - lo) * rng.uniform(i);
    float* staging = nullptr;
    check(cudaMalloc(&staging, sizeof(float) * n), "cudaMalloc");
    for (std::size_t at = 0; at < n; at += block) {
      check(cudaMemcpy(staging + at, host.data(), sizeof(float) * std::min(block, n - at), cudaMemcpyHostToDevice),
            "upload");
    }
    cuda::cast_from_f32(p_, t, staging, n, s);
    check(cudaStreamSynchronize(s), "cast");
    cudaFree(staging);
  }
  ~Array() { cudaFree(p_); }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  void* data() const { return p_; }
  float* f32() const { return static_cast<float*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

struct Row {
  std::string kernel, shape;
  double ms = 0, tflops = 0, gbs = 0;
  std::string reference;
  double ref_ms = 0, ref_tflops = 0, ref_gbs = 0;
};

class Bench {
 public:
  Bench(int reps) : reps_(reps) {
    check(cudaStreamCreate(&s_), "stream");
    check(cudaEventCreate(&a_), "event");
    check(cudaEventCreate(&b_), "event");
    mm_ = std::make_unique<cuda::Matmul>(s_, false);
  }
  ~Bench() {
    mm_.reset();
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
    cudaStreamDestroy(s_);
  }
  cudaStream_t stream() const { return s_; }
  cuda::Matmul& matmul() { return *mm_; }

  /** Milliseconds per call of f: two warm-up calls, then the mean of reps_. */
  double time(const std::function<void()>& f) {
    f();
    f();
    check(cudaEventRecord(a_, s_), "event");
    for (int i = 0; i < reps_; ++i) f();
    check(cudaEventRecord(b_, s_), "event");
    check(cudaEventSynchronize(b_), "event");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a_, b_), "elapsed");
    return ms / reps_;
  }

  void add(Row r) {
    std::printf("%-34s %-22s %9.3f ms %8.1f TFLOP/s %8.1f GB/s | %-30s %9.3f ms %8.1f TFLOP/s %8.1f GB/s\n",
                r.kernel.c_str(), r.shape.c_str(), r.ms, r.tflops, r.gbs, r.reference.c_str(), r.ref_ms, r.ref_tflops,
                r.ref_gbs);
    std::fflush(stdout);
    rows_.push_back(std::move(r));
  }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  int reps_;
  cudaStream_t s_ = nullptr;
  cudaEvent_t a_ = nullptr, b_ = nullptr;
  std::unique_ptr<cuda::Matmul> mm_;
  std::vector<Row> rows_;
};

struct Shape {
  std::string name;
  long C, H, B, T;
  long N() const { return B * T; }
  std::string label() const { return name + " T" + std::to_string(T) + " B" + std::to_string(B); }
};

double tflops(double flops, double ms) {
  return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0;
}
double gbs(double bytes, double ms) {
  return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0;
}

/** C[m, n] = A[m, k] B[n, k]^T in bfloat16 (batch of them), timed through cuBLASLt. */
double gemm_ms(Bench& b, long m, long n, long k, DType out, long ldc, int batch = 1) {
  Array a(static_cast<std::size_t>(m * k) * batch, DType::bf16, 1),
      w(static_cast<std::size_t>(n * k) * batch, DType::bf16, 2);
  Array c(static_cast<std::size_t>(m) * ldc * batch, out, 3);
  cuda::MatmulArgs g;
  g.trans_b = true, g.m = m, g.n = n, g.k = k;
  g.a = a.data(), g.a_type = DType::bf16, g.lda = k;
  g.b = w.data(), g.b_type = DType::bf16, g.ldb = k;
  g.c = c.data(), g.c_type = out, g.ldc = ldc;
  g.batch = batch, g.stride_a = m * k, g.stride_b = n * k, g.stride_c = m * ldc;
  return b.time([&] { b.matmul().run(g); });
}

void attention(Bench& b, const Shape& sh) {
  const long C = sh.C, H = sh.H, B = sh.B, T = sh.T, D = C / H, N = sh.N();
  const double flops = 2.0 * B * H * static_cast<double>(T) * T * D;
  const double ref_ms = gemm_ms(b, T, T, D, DType::bf16, T, static_cast<int>(B * H));
  const std::string ref = "cuBLASLt batched Q K^T (full)";
  Array qkv(N * 3 * C, DType::bf16, 10), y(N * C, DType::bf16, 11), dy(N * C, DType::bf16, 12),
      dqkv(N * 3 * C, DType::bf16, 13);
  Array lse(B * H * T, DType::f32, 14), delta(B * H * T, DType::f32, 15);
  const cudaStream_t s = b.stream();
  const double fwd =
      b.time([&] { cuda::attention_forward(y.data(), lse.f32(), qkv.data(), B, T, C, H, false, DType::bf16, s); });
  b.add({"attention forward (tensor cores)", sh.label(), fwd, tflops(flops, fwd), 0, ref, ref_ms, tflops(flops, ref_ms),
         0});
  const double bwd = b.time([&] {
    cuda::attention_backward_delta(delta.f32(), dy.data(), y.data(), B, T, C, H, DType::bf16, s);
    cuda::attention_backward(dqkv.data(), dy.data(), qkv.data(), lse.f32(), delta.f32(), B, T, C, H, DType::bf16, s);
  });
  b.add({"attention backward (tensor cores)", sh.label(), bwd, tflops(2.5 * flops, bwd), 0, ref + " x2.5", 2.5 * ref_ms,
         tflops(flops, ref_ms), 0});
  // The float32 kernels on CUDA cores, for contrast (what bfloat16 ran on before the tensor-core kernels).
  Array qkv32(N * 3 * C, DType::f32, 16), y32(N * C, DType::f32, 17);
  const double f32 =
      b.time([&] { cuda::attention_forward(y32.data(), lse.f32(), qkv32.data(), B, T, C, H, false, DType::f32, s); });
  b.add({"attention forward f32 (CUDA cores)", sh.label(), f32, tflops(flops, f32), 0, ref, ref_ms,
         tflops(flops, ref_ms), 0});
}

void lm_head(Bench& b, const Shape& sh) {
  const long C = sh.C, N = sh.N(), V = 50257, Vp = padded_vocab(V);
  const double flops = 2.0 * N * static_cast<double>(Vp) * C;
  const double padded = gemm_ms(b, N, Vp, C, DType::bf16, Vp);
  const double unaligned = gemm_ms(b, N, V, C, DType::f32, V);  // the old path: float32 logits, ld 50257
  b.add({"LM head logits, padded to 50304", sh.label(), padded, tflops(flops, padded), 0, "same, V 50257 f32 out (old)",
         unaligned, tflops(2.0 * N * static_cast<double>(V) * C, unaligned), 0});
  Array logits(N * Vp, DType::bf16, 20, -4, 4), losses(N, DType::f32, 21), logits32(N * V, DType::f32, 22, -4, 4);
  std::vector<std::int32_t> host_targets(N);
  for (long i = 0; i < N; ++i) host_targets[i] = static_cast<std::int32_t>((i * 7919) % V);
  std::int32_t* targets = nullptr;
  check(cudaMalloc(&targets, sizeof(std::int32_t) * N), "cudaMalloc");
  check(cudaMemcpy(targets, host_targets.data(), sizeof(std::int32_t) * N, cudaMemcpyHostToDevice), "targets");
  const cudaStream_t s = b.stream();
  // Fused: read twice, write once (bfloat16). Old: float32 forward (3 reads, 2 writes) and backward (1 read, 1 write).
  const double fused =
      b.time([&] { cuda::classifier_softmax_xent(losses.f32(), logits.data(), targets, N, V, Vp, DType::bf16, s); });
  const double old = b.time([&] {
    cuda::softmax_xent_forward(losses.f32(), logits32.f32(), targets, N, V, s);
    cuda::softmax_xent_backward(logits32.f32(), targets, N, V, 1.0f, s);
  });
  b.add({"softmax xent fused (bf16, padded)", sh.label(), fused, 0, gbs(3.0 * N * Vp * 2, fused),
         "float32 forward + backward (old)", old, 0, gbs(7.0 * N * V * 4, old)});
  cudaFree(targets);
}

void layernorm(Bench& b, const Shape& sh) {
  const long C = sh.C, N = sh.N();
  const cudaStream_t s = b.stream();
  Array x(N * C, DType::bf16, 30), out(N * C, DType::bf16, 31), w(C, DType::bf16, 32, 0.5, 1.5),
      bias(C, DType::bf16, 33), dout(N * C, DType::bf16, 34);
  Array mean(N, DType::f32, 35), rstd(N, DType::f32, 36), dw(C, DType::f32, 37), db(C, DType::f32, 38);
  Array scratch(cuda::layernorm_backward_scratch(N, C), DType::f32, 39), copy(N * C * 2, DType::bf16, 40);
  const double act = 2.0 * N * C;  // bytes of one bf16 activation
  const double memcpy_ms = b.time([&] {
    check(cudaMemcpyAsync(copy.data(), x.data(), static_cast<std::size_t>(act), cudaMemcpyDeviceToDevice, s), "copy");
  });
  const double fwd = b.time([&] {
    cuda::layernorm_forward(out.data(), mean.f32(), rstd.f32(), x.data(), w.data(), bias.data(), N, C, DType::bf16, s);
  });
  b.add({"layernorm forward", sh.label(), fwd, 0, gbs(2 * act, fwd), "cudaMemcpy D2D, same bytes", memcpy_ms, 0,
         gbs(2 * act, memcpy_ms)});
  const double bwd = b.time([&] {
    cuda::layernorm_backward(out.data(), dw.f32(), db.f32(), dout.data(), x.data(), w.data(), mean.f32(), rstd.f32(), N,
                             C, DType::bf16, scratch.f32(), s);
  });
  // dout and x read twice (dx, then dw/db), dx read and written.
  b.add({"layernorm backward", sh.label(), bwd, 0, gbs(6 * act, bwd), "cudaMemcpy D2D, same bytes", 3 * memcpy_ms, 0,
         gbs(6 * act, 3 * memcpy_ms)});
}

void block_products(Bench& b, const Shape& sh) {
  const long C = sh.C, N = sh.N();
  for (const auto& [name, n, k] : {std::tuple<const char*, long, long>{"qkv product", 3 * C, C},
                                   {"attention projection", C, C},
                                   {"MLP fc", 4 * C, C},
                                   {"MLP proj", C, 4 * C}}) {
    const double ms = gemm_ms(b, N, n, k, DType::bf16, n);
    b.add({std::string("cuBLASLt ") + name, sh.label(), ms, tflops(2.0 * N * n * k, ms), 0, "-", 0, 0, 0});
  }
}

void write_json(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream f(path);
  f << "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    f << "  {\"kernel\": \"" << r.kernel << "\", \"shape\": \"" << r.shape << "\", \"ms\": " << r.ms
      << ", \"tflops\": " << r.tflops << ", \"gbs\": " << r.gbs << ", \"reference\": \"" << r.reference
      << "\", \"reference_ms\": " << r.ref_ms << ", \"reference_tflops\": " << r.ref_tflops
      << ", \"reference_gbs\": " << r.ref_gbs << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  f << "]\n";
}

}  // namespace
}  // namespace fsdp::bench

int main(int argc, char** argv) {
  using namespace fsdp::bench;
  std::string json;
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::stoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: fsdp-kernel-bench [--json PATH] [--reps N]\n");
      return 2;
    }
  }
  try {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device properties");
    std::printf("device: %s (sm_%d%d), %d reps a kernel\n", prop.name, prop.major, prop.minor, reps);
    Bench b(reps);
    const Shape shapes[] = {{"gpt2-124m", 768, 12, 16, 1024},
                            {"gpt2-124m", 768, 12, 8, 2048},
                            {"gpt2-355m", 1024, 16, 16, 1024},
                            {"gpt2-355m", 1024, 16, 8, 2048},
                            {"head size 128", 1024, 8, 8, 2048}};
    for (const Shape& sh : shapes) attention(b, sh);
    for (const Shape& sh : {shapes[0], shapes[2]}) {
      lm_head(b, sh);
      layernorm(b, sh);
      block_products(b, sh);
    }
    if (!json.empty()) write_json(json, b.rows());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fsdp-kernel-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
