#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/convert.h"
#include "backend/cuda/cuda_backend_factory.h"
#include "backend/cuda/kernels/attention_path.h"
#include "backend/cuda/kernels/kernels.h"

namespace fsdp {

namespace cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

/**
 * Dense peak FLOP/s of the GPU in the compute dtype, from its datasheet (NVIDIA's, without
 * sparsity), for MFU. Matched by name; 0 (the trainer then measures) for other GPUs.
 */
double datasheet_peak(const std::string& name, DType compute, bool tf32) {
  struct Row {
    const char* name;
    double bf16, tf32, fp32;
  };
  // Longer names first: "H100 PCIe" before "H100".
  static const Row rows[] = {{"H100 PCIe", 756e12, 378e12, 51e12},  {"H100 NVL", 835e12, 418e12, 60e12},
                             {"H100", 989.4e12, 494.7e12, 66.9e12}, {"H200", 989.4e12, 494.7e12, 66.9e12},
                             {"H800", 989.4e12, 494.7e12, 66.9e12}, {"A100", 312e12, 156e12, 19.5e12}};
  for (const Row& r : rows) {
    if (name.find(r.name) == std::string::npos) continue;
    if (compute != DType::f32) return r.bf16;  // float16 and bfloat16 peak alike
    return tf32 ? r.tf32 : r.fp32;
  }
  return 0;
}

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options) : compute_(options.compute) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "device count");
  if (count == 0)
    throw std::runtime_error(
        "launch.device cuda: no GPU is visible to this process (CUDA_VISIBLE_DEVICES, the driver)");
  device_index_ = options.device_index % count;
  check(cudaSetDevice(device_index_), "set device");
  check(cudaFree(nullptr), "context");  // creates the context now, so it is measured alone
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "memory info");
  context_bytes_ = total - free;  // on a GPU of its own: the context (and the driver's reserve)
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device_index_), "device properties");
  peak_flops_ = datasheet_peak(prop.name, compute_, options.tf32);
  matmul_ = std::make_unique<Matmul>(stream_, options.tf32);
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device_index_) == cudaSuccess) {
    bus_id_ = bus;
    nvml_ = std::make_unique<NvmlReadings>(bus);
  } else {
    cudaGetLastError();
    bus_id_ = "cuda:" + std::to_string(device_index_);
  }
  check(cudaMalloc(&reduce_scratch_, sizeof(double) * (reduction_scratch_doubles() + 4)), "reduction scratch");
  check(cudaMallocHost(&reduce_host_, sizeof(double) * 4), "reduction results");
  check(cudaMalloc(&bad_device_, sizeof(unsigned long long)), "adamw count");
}

CudaBackend::~CudaBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  matmul_.reset();
  device_.release_cache();
  offloaded_.release_cache();
  batches_.release_cache();
  if (reduce_scratch_) cudaFree(reduce_scratch_);
  if (reduce_host_) cudaFreeHost(reduce_host_);
  if (bad_device_) cudaFree(bad_device_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaBackend::upload(void* device_dst, const void* host_src, std::size_t bytes) {
  check(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyDefault, stream_), "upload");
  // The source may be pageable memory the caller reuses at once.
  check(cudaStreamSynchronize(stream_), "upload");
}

void CudaBackend::download(void* host_dst, const void* device_src, std::size_t bytes) {
  check(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDefault, stream_), "download");
  check(cudaStreamSynchronize(stream_), "download");
}

void CudaBackend::synchronize() {
  check(cudaStreamSynchronize(stream_), "synchronize");
}

void CudaBackend::cast_from_f32(void* dst, const float* src, std::size_t n) {
  cuda::cast_from_f32(dst, compute_, src, n, stream_);
}

void CudaBackend::from_f32(void* dst, DType to, const float* src, std::size_t n) {
  if (to == DType::f32) return copy(static_cast<float*>(dst), src, n);
  cuda::cast_from_f32(dst, to, src, n, stream_);
}

void CudaBackend::to_f32(float* dst, const void* src, DType from, std::size_t n) {
  cuda::to_f32(dst, src, from, n, stream_);
}

std::optional<DeviceReadings> CudaBackend::readings() {
  DeviceReadings r;
  if (nvml_) {
    const NvmlSample s = nvml_->sample();
    r.util_percent = s.util_percent, r.temperature_c = s.temperature_c, r.mem_used = s.mem_used,
    r.mem_total = s.mem_total;
  }
  r.context_bytes = context_bytes_;
  r.library_workspace_bytes = matmul_->workspace_bytes();
  return r;
}

// --- matrix products ----------------------------------------------------------------------------

void CudaBackend::gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda,
                       const float* b, long ldb, float beta, float* c, long ldc) {
  MatmulArgs g;
  g.trans_a = trans_a, g.trans_b = trans_b, g.m = m, g.n = n, g.k = k;
  g.a = a, g.lda = lda, g.b = b, g.ldb = ldb, g.c = c, g.ldc = ldc, g.alpha = alpha, g.beta = beta;
  matmul_->run(g);
}

void CudaBackend::linear_forward(void* out, DType out_dtype, const void* in, const void* w, const void* b, long N,
                                 long I, long O) {
  if (b && out_dtype != compute_)
    throw std::invalid_argument("cuda linear_forward: a bias needs the output in the compute dtype");
  MatmulArgs g;
  g.trans_b = true, g.m = N, g.n = O, g.k = I;
  g.a = in, g.a_type = compute_, g.lda = I;
  g.b = w, g.b_type = compute_, g.ldb = I;
  g.c = out, g.c_type = out_dtype, g.ldc = O;
  g.bias = b;
  if (matmul_->run(g)) return;
  g.bias = nullptr;
  matmul_->run(g);
  // The bias is in the compute dtype: add it with a float32 copy (rare path: no fused epilogue).
  Buffer bias32 = scratch(sizeof(float) * O);
  std::vector<float> host = to_host_f32(b, compute_, static_cast<std::size_t>(O));
  upload(bias32.data(), host.data(), sizeof(float) * O);
  bias_act(out, nullptr, bias32.f32(), N, O, compute_, stream_);
}

void CudaBackend::linear_gelu_forward(void* g, void* h, const void* in, const void* w, const void* b, long N, long I,
                                      long O) {
  // cuBLASLt's GELU epilogue for bfloat16/float16; float32 runs keep the exact tanh-form kernel, so
  // they match the CPU to float32 rounding.
  if (compute_ != DType::f32 && b) {
    MatmulArgs m;
    m.trans_b = true, m.m = N, m.n = O, m.k = I;
    m.a = in, m.a_type = compute_, m.lda = I;
    m.b = w, m.b_type = compute_, m.ldb = I;
    m.c = g, m.c_type = compute_, m.ldc = O;
    m.bias = b, m.gelu_input = h;
    if (matmul_->run(m)) return;
  }
  linear_forward(h, compute_, in, w, b, N, I, O);
  cuda::gelu_forward(g, h, static_cast<std::size_t>(N * O), compute_, stream_);
}

void CudaBackend::linear_backward(void* din, bool accumulate_din, float* dw, float* db, const void* dout,
                                  DType dout_dtype, const void* in, const void* w, long N, long I, long O) {
  // cuBLASLt wants A and B of one dtype: a float32 gradient (the logits') meets compute-dtype
  // weights through a compute-dtype copy.
  Buffer cast;
  const void* d = dout;
  if (dout_dtype != compute_) {
    if (dout_dtype != DType::f32) throw std::invalid_argument("cuda linear_backward: gradient dtype");
    cast = scratch(compute_bytes(*this, static_cast<std::size_t>(N) * O));
    cuda::cast_from_f32(cast.data(), compute_, static_cast<const float*>(dout), static_cast<std::size_t>(N) * O,
                        stream_);
    d = cast.data();
  }
  if (din) {
    MatmulArgs g;
    g.m = N, g.n = I, g.k = O;
    g.a = d, g.a_type = compute_, g.lda = O;
    g.b = w, g.b_type = compute_, g.ldb = I;
    g.c = din, g.c_type = compute_, g.ldc = I, g.beta = accumulate_din ? 1.0f : 0.0f;
    matmul_->run(g);
  }
  MatmulArgs g;
  g.trans_a = true, g.m = O, g.n = I, g.k = N;
  g.a = d, g.a_type = compute_, g.lda = O;
  g.b = in, g.b_type = compute_, g.ldb = I;
  g.c = dw, g.c_type = DType::f32, g.ldc = I, g.beta = 1.0f;
  matmul_->run(g);
  if (db) {
    Buffer partial = scratch(sizeof(float) * bias_backward_scratch(N, O));
    bias_backward(db, dout, dout_dtype, N, O, partial.f32(), stream_);
  }
}

// --- embedding, layernorm ------------------------------------------------------------------------

void CudaBackend::embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B,
                                    long T, long C) {
  cuda::embedding_forward(out, tokens, wte, wpe, B, T, C, compute_, stream_);
}

void CudaBackend::embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* tokens, long B,
                                     long T, long C) {
  // Group positions by token on the host (a counting sort of B*T ids), so each dwte row is summed
  // by one block in position order: deterministic, no atomics.
  const std::size_t n = static_cast<std::size_t>(B * T);
  std::vector<std::int32_t> ids(n);
  download(ids.data(), tokens, sizeof(std::int32_t) * n);
  std::vector<std::int32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return ids[a] < ids[b]; });
  std::vector<std::int32_t> starts, bucket_tokens;
  for (std::size_t j = 0; j < n; ++j) {
    if (j == 0 || ids[order[j]] != ids[order[j - 1]]) {
      starts.push_back(static_cast<std::int32_t>(j));
      bucket_tokens.push_back(ids[order[j]]);
    }
  }
  starts.push_back(static_cast<std::int32_t>(n));
  const int buckets = static_cast<int>(bucket_tokens.size());
  std::vector<std::int32_t> packed(order);
  packed.insert(packed.end(), starts.begin(), starts.end());
  packed.insert(packed.end(), bucket_tokens.begin(), bucket_tokens.end());
  // Sized for the most the index can hold (every position its own token: 3n + 1), not for this
  // batch's tokens, so the workspace peak is the plan's whatever the batch (MEMORY.md workspace X).
  Buffer index = scratch(sizeof(std::int32_t) * (3 * n + 1));
  upload(index.data(), packed.data(), sizeof(std::int32_t) * packed.size());
  const std::int32_t* p = index.i32();
  cuda::embedding_backward(dwte, dwpe, dout, p, p + n, p + n + starts.size(), buckets, B, T, C, compute_, stream_);
}

void CudaBackend::layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b,
                                    long N, long C) {
  cuda::layernorm_forward(out, mean, rstd, x, w, b, N, C, compute_, stream_);
}

void CudaBackend::layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                                     const float* mean, const float* rstd, long N, long C) {
  Buffer partial = scratch(sizeof(float) * layernorm_backward_scratch(N, C));
  cuda::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C, compute_, partial.f32(), stream_);
}

void CudaBackend::residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual,
                                             const void* x, float p, std::uint64_t key, const void* w, const void* b,
                                             long N, long C) {
  cuda::residual_layernorm_forward(sum, out, mean, rstd, residual, x, p, key, w, b, N, C, compute_, stream_);
}

// --- attention -----------------------------------------------------------------------------------

void CudaBackend::check_head_size(long C, long H) const {
  if (!attention_supports(C / H)) {
    throw std::invalid_argument("launch.device cuda: head size " + std::to_string(C / H) +
                                " (model.d_model / model.n_heads) has no attention kernel; use 32, 64 or 128");
  }
}

std::string CudaBackend::attention_kernels(long B, long C, long H) const {
  return attention_path_name(compute_, C, H, B);
}

std::size_t CudaBackend::attention_state_size(long B, long T, long H) const {
  return static_cast<std::size_t>(B * H * T);
}
std::size_t CudaBackend::attention_scratch_size(long B, long T, long H) const {
  return static_cast<std::size_t>(B * H * T);
}

void CudaBackend::attention_forward(void* y, float* lse, const void* qkv, long B, long T, long C, long H,
                                    AttentionTap* tap) {
  check_head_size(C, H);
  cuda::attention_forward(y, lse, qkv, B, T, C, H, false, compute_, stream_);
  if (!tap) return;
  // The tap sees (and may plant a NaN in) the log-sum-exp; y is then recomputed from it, so
  // whatever the tap did reaches the values as it would on the CPU.
  tap->softmax_state(lse, attention_state_size(B, T, H));
  cuda::attention_forward(y, lse, qkv, B, T, C, H, true, compute_, stream_);
}

void CudaBackend::attention_state(float* lse, const void* qkv, long B, long T, long C, long H) {
  check_head_size(C, H);
  cuda::attention_forward(nullptr, lse, qkv, B, T, C, H, false, compute_, stream_);
}

void CudaBackend::attention_backward(void* dqkv, float* delta, const void* dy, const void* qkv, const void* y,
                                     const float* lse, long B, long T, long C, long H, AttentionTap* tap) {
  check_head_size(C, H);
  attention_backward_delta(delta, dy, y, B, T, C, H, compute_, stream_);
  if (tap) tap->softmax_grad(delta, attention_scratch_size(B, T, H));
  cuda::attention_backward(dqkv, dy, qkv, lse, delta, B, T, C, H, compute_, stream_);
}

// --- elementwise, loss -------------------------------------------------------------------------

void CudaBackend::gelu_forward(void* out, const void* in, std::size_t n) {
  cuda::gelu_forward(out, in, n, compute_, stream_);
}
void CudaBackend::gelu_backward(void* d, const void* in, std::size_t n) {
  cuda::gelu_backward(d, in, n, compute_, stream_);
}

void CudaBackend::dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p,
                                   std::uint64_t key) {
  cuda::dropout_residual(out, residual, x, n, p, key, compute_, stream_);
}

void CudaBackend::dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key) {
  cuda::dropout(out, x, n, p, key, compute_, stream_);
}

void CudaBackend::softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) {
  cuda::softmax_xent_forward(losses, logits, targets, N, V, stream_);
}

void CudaBackend::softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) {
  cuda::softmax_xent_backward(probs, targets, N, V, scale, stream_);
}

// --- whole buffers -------------------------------------------------------------------------------

void CudaBackend::fill(float* x, std::size_t n, float value) {
  cuda::fill(x, n, value, stream_);
}
void CudaBackend::zero(void* x, std::size_t bytes) {
  check(cudaMemsetAsync(x, 0, bytes, stream_), "memset");
}
void CudaBackend::copy(float* dst, const float* src, std::size_t n) {
  check(cudaMemcpyAsync(dst, src, sizeof(float) * n, cudaMemcpyDefault, stream_), "copy");
}

const double* CudaBackend::reduce(const void* x, DType dtype, std::size_t n, bool with_stats) {
  double* results = reduce_scratch_ + reduction_scratch_doubles();
  if (with_stats)
    cuda::stats(results, x, dtype, n, reduce_scratch_, stream_);
  else
    cuda::sum(results, static_cast<const float*>(x), n, reduce_scratch_, stream_);
  check(cudaMemcpyAsync(reduce_host_, results, sizeof(double) * 4, cudaMemcpyDeviceToHost, stream_),
        "reduction result");
  check(cudaStreamSynchronize(stream_), "reduction");
  return reduce_host_;
}

double CudaBackend::sum(const float* x, std::size_t n) {
  return reduce(x, DType::f32, n, false)[0];
}
double CudaBackend::sum_squares(const float* x, std::size_t n) {
  return reduce(x, DType::f32, n, false)[1];
}
TensorStats CudaBackend::stats(const float* x, std::size_t n) {
  return stats(x, DType::f32, n);
}

TensorStats CudaBackend::stats(const void* x, DType dtype, std::size_t n) {
  const double* r = reduce(x, dtype, n, true);
  TensorStats s;
  s.nonfinite = static_cast<std::uint64_t>(r[3]);
  const double finite = static_cast<double>(n) - r[3];
  if (finite > 0) {
    s.mean = r[0] / finite;
    s.std = std::sqrt(std::max(0.0, r[1] / finite - s.mean * s.mean));
  }
  s.max_abs = r[2];
  return s;
}

void CudaBackend::set_element(void* x, DType dtype, std::size_t index, float value) {
  cuda::set_element(x, dtype, index, value, stream_);
}

std::uint64_t CudaBackend::adamw_check(const AdamWArgs& a) {
  check(cudaMemsetAsync(bad_device_, 0, sizeof(unsigned long long), stream_), "memset");
  cuda::adamw(a, false, bad_device_, stream_);
  unsigned long long bad = 0;
  download(&bad, bad_device_, sizeof bad);
  return bad;
}

void CudaBackend::adamw_apply(const AdamWArgs& a) {
  cuda::adamw(a, true, nullptr, stream_);
}

}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

std::vector<GpuInfo> probe_gpus() {
  std::vector<GpuInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: no GPUs
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, static_cast<std::uint64_t>(p.totalGlobalMem), p.major, p.minor});
  }
  return out;
}

}  // namespace fsdp
