// cuBLASLt behind Matmul (matmul.h). The one file of the backend that needs cuBLAS's headers.
//
// Row-major C[m, n] = op(A) op(B) is column-major C^T[n, m] = op(B)^T op(A)^T, so cuBLASLt is
// called with the operands swapped (its A is our B) and M = n, N = m. The bias epilogue adds a
// vector along cuBLAS's rows, which are our columns: a linear layer's per-feature bias. Chosen
// algorithms are cached per shape and dtype: the same products recur every step.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "backend/cuda/matmul.h"

namespace fsdp::cuda {

namespace {

// 32 MiB: what cuBLASLt's heuristics use on Hopper for large products (PyTorch's default there too).
constexpr std::size_t kWorkspaceBytes = 32u << 20;

void check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt ") + what + ": " + cublasLtGetStatusString(st));
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

/** Owns one cuBLASLt descriptor. */
template <class H, cublasStatus_t (*Destroy)(H)>
struct Owned {
  H h = nullptr;
  ~Owned() {
    if (h) Destroy(h);
  }
};

using Key = std::tuple<bool, bool, long, long, long, int, int, int, long, long, long, int, bool, int, long long,
                       long long, long long>;

/** Makes a layout a strided batch of `batch` matrices `stride` elements apart. */
void set_batch(cublasLtMatrixLayout_t layout, int batch, long long stride) {
  const std::int32_t count = batch;
  const std::int64_t offset = stride;
  check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
        "batch count");
  check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof offset),
        "batch stride");
}

}  // namespace

struct Matmul::State {
  cudaStream_t stream = nullptr;
  bool tf32 = false;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  // Per product: the algorithm, or none (an epilogue cuBLASLt cannot do for this shape).
  std::map<Key, std::pair<bool, cublasLtMatmulAlgo_t>> algos;
};

Matmul::Matmul(cudaStream_t stream, bool tf32) : s_(std::make_unique<State>()) {
  s_->stream = stream;
  s_->tf32 = tf32;
  check(cublasLtCreate(&s_->handle), "create");
  if (cudaMalloc(&s_->workspace, kWorkspaceBytes) != cudaSuccess)
    throw std::runtime_error("cuBLASLt workspace: cudaMalloc of 32 MiB failed");
}

Matmul::~Matmul() {
  if (s_->workspace) cudaFree(s_->workspace);
  if (s_->handle) cublasLtDestroy(s_->handle);
}

std::size_t Matmul::workspace_bytes() const {
  return kWorkspaceBytes;
}

bool Matmul::run(const MatmulArgs& a) {
  const bool all_f32 = a.a_type == DType::f32 && a.b_type == DType::f32;
  const cublasComputeType_t compute = all_f32 && s_->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasLtEpilogue_t epilogue = a.gelu_input ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                      : a.bias     ? CUBLASLT_EPILOGUE_BIAS
                                                   : CUBLASLT_EPILOGUE_DEFAULT;

  Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> op;
  check(cublasLtMatmulDescCreate(&op.h, compute, CUDA_R_32F), "matmul descriptor");
  // cuBLAS's A is our B, its B our A.
  const cublasOperation_t ta = a.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = a.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
  check(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
  check(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "epilogue");
  if (a.bias)
    check(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias, sizeof a.bias), "bias");
  if (a.gelu_input) {
    const std::int64_t ld = a.ldc;
    check(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &a.gelu_input,
                                         sizeof a.gelu_input),
          "gelu input");
    check(cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), "gelu input ld");
  }

  // Column-major layouts of the stored matrices: ours row-major [r, c] with ld is theirs [c, r].
  const std::uint64_t M = static_cast<std::uint64_t>(a.n), N = static_cast<std::uint64_t>(a.m),
                      K = static_cast<std::uint64_t>(a.k);
  Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> la, lb, lc;
  check(cublasLtMatrixLayoutCreate(&la.h, cuda_type(a.b_type), ta == CUBLAS_OP_N ? M : K, ta == CUBLAS_OP_N ? K : M,
                                   a.ldb),
        "layout A");
  check(cublasLtMatrixLayoutCreate(&lb.h, cuda_type(a.a_type), tb == CUBLAS_OP_N ? K : N, tb == CUBLAS_OP_N ? N : K,
                                   a.lda),
        "layout B");
  check(cublasLtMatrixLayoutCreate(&lc.h, cuda_type(a.c_type), M, N, a.ldc), "layout C");
  if (a.batch > 1) {
    set_batch(la.h, a.batch, a.stride_b);  // cuBLAS's A is our B
    set_batch(lb.h, a.batch, a.stride_a);
    set_batch(lc.h, a.batch, a.stride_c);
  }

  const Key key{a.trans_a,
                a.trans_b,
                a.m,
                a.n,
                a.k,
                static_cast<int>(a.a_type),
                static_cast<int>(a.b_type),
                static_cast<int>(a.c_type),
                a.lda,
                a.ldb,
                a.ldc,
                static_cast<int>(epilogue),
                a.beta != 0.0f,
                a.batch,
                a.stride_a,
                a.stride_b,
                a.stride_c};
  auto found = s_->algos.find(key);
  if (found == s_->algos.end()) {
    Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
    check(cublasLtMatmulPreferenceCreate(&pref.h), "preference");
    const std::uint64_t ws = kWorkspaceBytes;
    check(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
          "workspace preference");
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(s_->handle, op.h, la.h, lb.h, lc.h, lc.h, pref.h, 1, &result, &count);
    const bool usable = st == CUBLAS_STATUS_SUCCESS && count > 0;
    if (!usable && epilogue == CUBLASLT_EPILOGUE_DEFAULT) {
      throw std::runtime_error("cuBLASLt: no algorithm for a " + std::to_string(a.m) + "x" + std::to_string(a.n) + "x" +
                               std::to_string(a.k) + " product (" + cublasLtGetStatusString(st) + ")");
    }
    found = s_->algos.emplace(key, std::make_pair(usable, result.algo)).first;
  }
  if (!found->second.first) return false;
  check(cublasLtMatmul(s_->handle, op.h, &a.alpha, a.b, la.h, a.a, lb.h, &a.beta, a.c, lc.h, a.c, lc.h,
                       &found->second.second, s_->workspace, kWorkspaceBytes, s_->stream),
        "matmul");
  return true;
}

}  // namespace fsdp::cuda
