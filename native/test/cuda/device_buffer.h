// Device memory for the GPU kernel tests: a tensor of n elements in a dtype, uploaded from and
// downloaded to float32 host vectors (rounded to nearest even on the way in). New tensors are
// filled with 0xff bytes, a NaN in every dtype, so an element a kernel fails to write shows up.
// Copies are synchronous on the legacy default stream, which the tests launch their kernels on.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "half_rounding.h"

namespace fsdp::test {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class DeviceTensor {
 public:
  DeviceTensor(std::size_t n, DType t) : n_(n), t_(t) {
    cuda_check(cudaMalloc(&p_, bytes() ? bytes() : 1), "cudaMalloc");
    cuda_check(cudaMemset(p_, 0xff, bytes()), "cudaMemset");
  }
  DeviceTensor(const std::vector<float>& host, DType t) : DeviceTensor(host.size(), t) { upload(host); }
  ~DeviceTensor() { cudaFree(p_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void* data() const { return p_; }
  float* f32() const { return static_cast<float*>(p_); }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * dtype_bytes(t_); }

  void upload(const std::vector<float>& host) {
    if (host.size() != n_) throw std::invalid_argument("DeviceTensor::upload: size");
    if (t_ == DType::f32) {
      cuda_check(cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice), "upload");
      return;
    }
    std::vector<std::uint16_t> bits(n_);
    for (std::size_t i = 0; i < n_; ++i) bits[i] = t_ == DType::bf16 ? float_to_bf16(host[i]) : float_to_f16(host[i]);
    cuda_check(cudaMemcpy(p_, bits.data(), bytes(), cudaMemcpyHostToDevice), "upload");
  }

  std::vector<float> host() const {
    cuda_check(cudaDeviceSynchronize(), "kernels before a download");
    std::vector<float> out(n_);
    if (t_ == DType::f32) {
      cuda_check(cudaMemcpy(out.data(), p_, bytes(), cudaMemcpyDeviceToHost), "download");
      return out;
    }
    std::vector<std::uint16_t> bits(n_);
    cuda_check(cudaMemcpy(bits.data(), p_, bytes(), cudaMemcpyDeviceToHost), "download");
    for (std::size_t i = 0; i < n_; ++i) out[i] = t_ == DType::bf16 ? bf16_to_float(bits[i]) : f16_to_float(bits[i]);
    return out;
  }

 private:
  void* p_ = nullptr;
  std::size_t n_;
  DType t_;
};

}  // namespace fsdp::test
