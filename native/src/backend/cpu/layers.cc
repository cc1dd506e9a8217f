// The Backend interface's layer operations on the CPU, composed from the float32 primitives in the
// order the model used before GPUs (so the CPU's numbers are those of the reference fixtures).
// The CPU computes in float32 only: every `void*` here is a float*.
#include <cstring>
#include <stdexcept>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

namespace {

float* f(void* p) {
  return static_cast<float*>(p);
}
const float* f(const void* p) {
  return static_cast<const float*>(p);
}

void require_f32(DType t, const char* what) {
  if (t != DType::f32)
    throw std::invalid_argument(std::string("cpu backend: ") + what + " in " + dtype_name(t) +
                                "; the CPU computes in float32");
}

}  // namespace

void CpuBackend::cast_from_f32(void* dst, const float* src, std::size_t n) {
  copy(f(dst), src, n);
}

void CpuBackend::linear_forward(void* out, DType out_dtype, const void* in, const void* w, const void* b, long N,
                                long I, long O) {
  require_f32(out_dtype, "linear output");
  bias_fill(f(out), f(b), N, O);
  gemm(false, true, N, O, I, 1.0f, f(in), I, f(w), I, 1.0f, f(out), O);
}

void CpuBackend::linear_gelu_forward(void* g, void* h, const void* in, const void* w, const void* b, long N, long I,
                                     long O) {
  linear_forward(h, DType::f32, in, w, b, N, I, O);
  gelu_forward(f(g), f(h), static_cast<std::size_t>(N * O));
}

void CpuBackend::linear_backward(void* din, bool accumulate_din, float* dw, float* db, const void* dout,
                                 DType dout_dtype, const void* in, const void* w, long N, long I, long O) {
  require_f32(dout_dtype, "linear gradient");
  if (din) gemm(false, false, N, I, O, 1.0f, f(dout), O, f(w), I, accumulate_din ? 1.0f : 0.0f, f(din), I);
  gemm(true, false, O, I, N, 1.0f, f(dout), O, f(in), I, 1.0f, dw, I);
  if (db) bias_backward(db, f(dout), N, O);
}

void CpuBackend::embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B,
                                   long T, long C) {
  embedding_forward(f(out), tokens, f(wte), f(wpe), B, T, C);
}

void CpuBackend::embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* tokens, long B,
                                    long T, long C) {
  embedding_backward(dwte, dwpe, f(dout), tokens, B, T, C);
}

void CpuBackend::layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b,
                                   long N, long C) {
  layernorm_forward(f(out), mean, rstd, f(x), f(w), f(b), N, C);
}

void CpuBackend::layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                                    const float* mean, const float* rstd, long N, long C) {
  layernorm_backward(f(dx), dw, db, f(dout), f(x), f(w), mean, rstd, N, C);
}

void CpuBackend::residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual,
                                            const void* x, float p, std::uint64_t key, const void* w, const void* b,
                                            long N, long C) {
  dropout_residual(f(sum), f(residual), f(x), static_cast<std::size_t>(N * C), p, key);
  layernorm_forward(f(out), mean, rstd, f(sum), f(w), f(b), N, C);
}

std::size_t CpuBackend::attention_state_size(long B, long T, long H) const {
  return static_cast<std::size_t>(B * H * T * T);
}
std::size_t CpuBackend::attention_scratch_size(long B, long T, long H) const {
  return static_cast<std::size_t>(B * H * T * T);
}

void CpuBackend::attention_forward(void* y, float* probs, const void* qkv, long B, long T, long C, long H,
                                   AttentionTap* tap) {
  attention_probs(probs, f(qkv), B, T, C, H);
  if (tap) tap->softmax_state(probs, attention_state_size(B, T, H));
  attention_values(f(y), probs, f(qkv), B, T, C, H);
}

void CpuBackend::attention_state(float* probs, const void* qkv, long B, long T, long C, long H) {
  attention_probs(probs, f(qkv), B, T, C, H);
}

void CpuBackend::attention_backward(void* dqkv, float* dprobs, const void* dy, const void* qkv, const void* /*y*/,
                                    const float* probs, long B, long T, long C, long H, AttentionTap* tap) {
  attention_values_backward(dprobs, f(dqkv), f(dy), probs, f(qkv), B, T, C, H);
  if (tap) tap->softmax_grad(dprobs, attention_scratch_size(B, T, H));
  attention_probs_backward(f(dqkv), dprobs, probs, f(qkv), B, T, C, H);
}

void CpuBackend::gelu_forward(void* out, const void* in, std::size_t n) {
  gelu_forward(f(out), f(in), n);
}
void CpuBackend::gelu_backward(void* d, const void* in, std::size_t n) {
  gelu_backward(f(d), f(in), n);
}

void CpuBackend::dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p,
                                  std::uint64_t key) {
  dropout_residual(f(out), f(residual), f(x), n, p, key);
}

void CpuBackend::dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key) {
  dropout(f(out), f(x), n, p, key);
}

void CpuBackend::zero(void* x, std::size_t bytes) {
  fill(f(x), bytes / sizeof(float), 0.0f);
}

TensorStats CpuBackend::stats(const void* x, DType dtype, std::size_t n) {
  require_f32(dtype, "statistics");
  return stats(f(x), n);
}

void CpuBackend::set_element(void* x, DType dtype, std::size_t index, float value) {
  require_f32(dtype, "set_element");
  f(x)[index] = value;
}

}  // namespace fsdp
