// Matrix products on the GPU through cuBLASLt, behind a header with no cuBLAS types so the rest
// of the backend compiles where cuBLAS is absent (the compile check on machines without it).
// Row-major, as the rest of the runtime; cublaslt_matmul.cc maps it onto cuBLAS's column-major
// convention (C^T = B^T A^T).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "backend/backend.h"

namespace fsdp::cuda {

/** C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C, each operand with its own dtype and leading dimension. */
struct MatmulArgs {
  bool trans_a = false, trans_b = false;
  long m = 0, n = 0, k = 0;
  const void* a = nullptr;
  DType a_type = DType::f32;
  long lda = 0;
  const void* b = nullptr;
  DType b_type = DType::f32;
  long ldb = 0;
  void* c = nullptr;
  DType c_type = DType::f32;
  long ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  /** Epilogue: C = ... + bias[n] on every row (bias in c_type). */
  const void* bias = nullptr;
  /** Epilogue with bias: gelu_input = AB + bias and C = GELU(gelu_input) (tanh form), gelu_input[m, n] in c_type with
   * ldc. */
  void* gelu_input = nullptr;
  /** Strided batch: `batch` independent products, operand i at a + i * stride_a elements (and b, c alike). */
  int batch = 1;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
};

class Matmul {
 public:
  /** tf32: float32 products on TF32 tensor cores. The workspace is allocated here, outside the counting allocator. */
  Matmul(cudaStream_t stream, bool tf32);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  /**
   * Runs the product. Returns false, having done nothing, when cuBLASLt offers no algorithm for the
   * asked epilogue (the caller then runs the product plain and the epilogue as its own kernel);
   * throws std::runtime_error on any other failure.
   */
  bool run(const MatmulArgs& args);
  std::size_t workspace_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace fsdp::cuda
