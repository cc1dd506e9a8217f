// The CUDA backend: cuBLASLt for matrix products (matmul.h; bias and, in bfloat16/float16, GELU
// fused into the epilogue), the runtime's own kernels for everything else (kernels/): fused
// LayerNorm (+ residual), flash-style attention, fused softmax cross-entropy, fused AdamW, all
// with 16-byte loads where the shapes allow. One stream per backend; every device tensor from the
// counting allocator. Computes in the run's param_dtype with float32 masters, gradients and
// optimizer state (backend.h).
//
// Which GPU: the rank's local rank among its host's processes, modulo the GPUs visible, so ranks
// may share a GPU (tests on a one-GPU machine; collectives then go through MPI, since NCCL refuses
// two ranks on one device). Memory of host_allocator() (cpu_offload) is pinned and reached by the
// kernels through unified addressing; every copy names cudaMemcpyDefault so either side may be it.
#pragma once
#include <cuda_runtime.h>

#include <memory>

#include "backend/backend.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/nvml_readings.h"

namespace fsdp::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Allocator& allocator() override { return device_; }
  bool host_memory() const override { return false; }
  Allocator& host_allocator() override { return offloaded_; }
  Allocator& batch_allocator() override { return batches_; }
  void upload(void* device_dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* device_src, std::size_t bytes) override;
  void synchronize() override;
  DType compute_dtype() const override { return compute_; }
  void cast_from_f32(void* dst, const float* src, std::size_t n) override;
  void from_f32(void* dst, DType to, const float* src, std::size_t n) override;
  void to_f32(float* dst, const void* src, DType from, std::size_t n) override;
  void* compute_queue() override { return stream_; }
  std::string device_id() const override { return bus_id_; }
  double nominal_peak_flops() const override { return peak_flops_; }
  std::optional<DeviceReadings> readings() override;
  /** kernels/attention_path.h's rule at the model's shape: tensor cores, or the CUDA cores and why. */
  std::string attention_kernels(long B, long C, long H) const override;
  cudaStream_t stream() const { return stream_; }
  int device_index() const { return device_index_; }

  void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda, const float* b,
            long ldb, float beta, float* c, long ldc) override;
  void linear_forward(void* out, DType out_dtype, const void* in, const void* w, const void* b, long N, long I,
                      long O) override;
  void linear_gelu_forward(void* g, void* h, const void* in, const void* w, const void* b, long N, long I,
                           long O) override;
  void linear_backward(void* din, bool accumulate_din, float* dw, float* db, const void* dout, DType dout_dtype,
                       const void* in, const void* w, long N, long I, long O) override;
  void embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B, long T,
                         long C) override;
  void embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* tokens, long B, long T,
                          long C) override;
  void layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b, long N,
                         long C) override;
  void layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                          const float* mean, const float* rstd, long N, long C) override;
  void residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual, const void* x,
                                  float p, std::uint64_t key, const void* w, const void* b, long N, long C) override;
  std::size_t attention_state_size(long B, long T, long H) const override;
  std::size_t attention_scratch_size(long B, long T, long H) const override;
  void attention_forward(void* y, float* state, const void* qkv, long B, long T, long C, long H,
                         AttentionTap* tap) override;
  void attention_state(float* state, const void* qkv, long B, long T, long C, long H) override;
  void attention_backward(void* dqkv, float* scratch, const void* dy, const void* qkv, const void* y,
                          const float* state, long B, long T, long C, long H, AttentionTap* tap) override;
  void gelu_forward(void* out, const void* in, std::size_t n) override;
  void gelu_backward(void* d, const void* in, std::size_t n) override;
  void dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p,
                        std::uint64_t key) override;
  void dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key) override;
  // classifier.cc: padded vocabulary, fused softmax cross-entropy.
  std::size_t classifier_state_bytes(long N, long V) const override;
  void classifier_forward(void* state, float* losses, const void* x, const void* w, const std::int32_t* targets, long N,
                          long C, long V, ClassifierTap* tap, float* logits_copy) override;
  void classifier_backward(void* dx, float* dw, void* state, const void* x, const void* w, const std::int32_t* targets,
                           long N, long C, long V, float scale, ClassifierTap* tap) override;
  void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) override;
  void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) override;
  void fill(float* x, std::size_t n, float value) override;
  void zero(void* x, std::size_t bytes) override;
  void copy(float* dst, const float* src, std::size_t n) override;
  double sum(const float* x, std::size_t n) override;
  double sum_squares(const float* x, std::size_t n) override;
  TensorStats stats(const float* x, std::size_t n) override;
  TensorStats stats(const void* x, DType dtype, std::size_t n) override;
  void set_element(void* x, DType dtype, std::size_t index, float value) override;
  std::uint64_t adamw_check(const AdamWArgs& a) override;
  void adamw_apply(const AdamWArgs& a) override;

 private:
  /** The four reduction results (reductions.cu), on the host. */
  const double* reduce(const void* x, DType dtype, std::size_t n, bool stats);
  /** Scratch for one call, from the allocator (counted as workspace). */
  Buffer scratch(std::size_t bytes) { return device_.allocate(MemoryCategory::workspace, bytes); }
  void check_head_size(long C, long H) const;

  int device_index_ = 0;
  std::string bus_id_;
  DType compute_ = DType::f32;
  cudaStream_t stream_ = nullptr;
  std::uint64_t context_bytes_ = 0;
  double peak_flops_ = 0;
  CudaAllocator device_;
  PinnedHostAllocator offloaded_;  // fsdp.cpu_offload's host memory
  PinnedHostAllocator batches_;    // the data loader's ring
  std::unique_ptr<Matmul> matmul_;
  std::unique_ptr<NvmlReadings> nvml_;
  double* reduce_scratch_ = nullptr;          // device: reduction_scratch_doubles() + 4 results
  double* reduce_host_ = nullptr;             // pinned: 4 results
  unsigned long long* bad_device_ = nullptr;  // adamw_check's count
};

}  // namespace fsdp::cuda
