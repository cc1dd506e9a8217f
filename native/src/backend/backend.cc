#include "backend/backend.h"

#include <cstring>
#include <stdexcept>

#include "backend/cpu/cpu_backend.h"
#include "runtime/half.h"

#ifdef FSDP_WITH_CUDA
#include "backend/cuda/cuda_backend_factory.h"
#endif

namespace fsdp {

std::size_t dtype_bytes(DType t) {
  return t == DType::f32 ? 4 : 2;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
  }
  return "?";
}

void Backend::upload(void* device_dst, const void* host_src, std::size_t bytes) {
  std::memcpy(device_dst, host_src, bytes);
}
void Backend::download(void* host_dst, const void* device_src, std::size_t bytes) {
  std::memcpy(host_dst, device_src, bytes);
}

std::vector<float> Backend::to_host_f32(const void* x, DType dtype, std::size_t n) {
  std::vector<float> out(n);
  if (dtype == DType::f32) {
    download(out.data(), x, n * sizeof(float));
    return out;
  }
  std::vector<std::uint16_t> bits(n);
  download(bits.data(), x, n * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < n; ++i) out[i] = dtype == DType::bf16 ? bf16_to_float(bits[i]) : f16_to_float(bits[i]);
  return out;
}

void Backend::classifier_forward(void* state, float* losses, const void* x, const void* w, const std::int32_t* targets,
                                 long N, long C, long V, ClassifierTap* tap, float* logits_copy) {
  float* logits = static_cast<float*>(state);
  const std::size_t n = static_cast<std::size_t>(N) * static_cast<std::size_t>(V);
  linear_forward(logits, DType::f32, x, w, nullptr, N, C, V);
  if (tap) tap->logits(logits, n, DType::f32);
  if (logits_copy) download(logits_copy, logits, sizeof(float) * n);
  softmax_xent_forward(losses, logits, targets, N, V);
  if (tap) tap->losses(losses, static_cast<std::size_t>(N));
}

void Backend::classifier_backward(void* dx, float* dw, void* state, const void* x, const void* w,
                                  const std::int32_t* targets, long N, long C, long V, float scale,
                                  ClassifierTap* tap) {
  float* probs = static_cast<float*>(state);
  softmax_xent_backward(probs, targets, N, V, scale);
  if (tap) tap->logits_grad(probs, static_cast<std::size_t>(N) * static_cast<std::size_t>(V), DType::f32);
  linear_backward(dx, false, dw, nullptr, probs, DType::f32, x, w, N, C, V);
}

// On host memory the conversions run here; a device backend overrides them (this fallback would
// go through the host, correct but slow).
void Backend::from_f32(void* dst, DType to, const float* src, std::size_t n) {
  std::vector<float> x(n);
  download(x.data(), src, sizeof(float) * n);
  if (to == DType::f32) return upload(dst, x.data(), sizeof(float) * n);
  std::vector<std::uint16_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) bits[i] = to == DType::bf16 ? float_to_bf16(x[i]) : float_to_f16(x[i]);
  upload(dst, bits.data(), sizeof(std::uint16_t) * n);
}

void Backend::to_f32(float* dst, const void* src, DType from, std::size_t n) {
  const std::vector<float> x = to_host_f32(src, from, n);
  upload(dst, x.data(), sizeof(float) * n);
}

bool cuda_backend_built() {
#ifdef FSDP_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& device, const BackendOptions& options) {
  if (device == "cpu") {
    // bf16 on the CPU is bf16 matrix products over float32 everything else (cpu/bf16_gemm.h).
    if (options.compute == DType::f16)
      throw std::runtime_error("launch.device: cpu computes in float32, or bf16 for its matrix products, not float16");
    return std::make_unique<CpuBackend>(options.compute == DType::bf16);
  }
#ifdef FSDP_WITH_CUDA
  if (device == "cuda") return make_cuda_backend(options);
#endif
  throw std::runtime_error("launch.device: " + device + ": this build of the runtime has no such backend" +
                           (device == "cuda" ? " (it is built only where a CUDA toolkit with cuBLAS is found)" : ""));
}

}  // namespace fsdp
