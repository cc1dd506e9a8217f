// The classifier on the GPU (Backend::classifier_*): logits = x W^T, softmax cross-entropy, and
// the LM head's gradient products.
//
// The logits are kept in the compute dtype as [N, Vp] rows, Vp = V padded to a multiple of 128
// (padded_vocab.h), and every product runs on aligned extents: W's first `whole` rows (V rounded
// down to 128) are used in place, its last V - whole rows through a zero-padded [128, C] copy (a
// few hundred kilobytes a call), and dW's last rows through a [128, C] float32 scratch added back
// into the real rows — so W, dW, checkpoints and exports never see the padding. One fused pass
// (kernels/loss.cu) turns the logits into the losses and softmax - onehot in place; backward is the
// two products with the gradient's scale as their alpha. Full float32 logits are never formed
// (only for an evaluation that asks for a host copy of them).
//
// A tap (the NaN locator) sees [N, V] rows in the compute dtype through a compact copy, and what
// it writes there is copied back, so a planted NaN flows on exactly as on the CPU.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/padded_vocab.h"

namespace fsdp::cuda {

namespace {

/** The vocabulary's split: rows [0, whole) of W as they are, [whole, V) through a padded block of `tail` (0 or 128)
 * rows. */
struct VocabSplit {
  long V, padded, whole, tail;
};

VocabSplit split_of(long V) {
  const long whole = V / kVocabAlignment * kVocabAlignment;
  return {V, padded_vocab(V), whole, padded_vocab(V) - whole};
}

/** p advanced by n elements of dtype t. */
const void* at(const void* p, long n, DType t) {
  return static_cast<const char*>(p) + static_cast<std::size_t>(n) * dtype_bytes(t);
}
void* at(void* p, long n, DType t) {
  return static_cast<char*>(p) + static_cast<std::size_t>(n) * dtype_bytes(t);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

/** W's rows [whole, V) then zeros: the [tail, C] block the tail products use (workspace). */
Buffer padded_tail(Backend& be, const void* w, const VocabSplit& v, long C, DType t, cudaStream_t s) {
  Buffer block =
      be.allocator().allocate(MemoryCategory::workspace, dtype_bytes(t) * static_cast<std::size_t>(v.tail * C));
  const std::size_t used = dtype_bytes(t) * static_cast<std::size_t>((v.V - v.whole) * C);
  check(cudaMemcpyAsync(block.data(), at(w, v.whole * C, t), used, cudaMemcpyDeviceToDevice, s),
        "classifier tail rows");
  check(cudaMemsetAsync(static_cast<char*>(block.data()) + used, 0, block.bytes() - used, s),
        "classifier tail padding");
  return block;
}

/** Lets f see rows [N, ld] of dtype t as a compact [N, V] tensor, and keeps what it writes there. */
template <class F>
void through_compact_view(Backend& be, void* rows, long N, long V, long ld, DType t, cudaStream_t s, F&& f) {
  Buffer view = be.allocator().allocate(MemoryCategory::workspace, dtype_bytes(t) * static_cast<std::size_t>(N * V));
  copy_rows(view.data(), V, t, rows, ld, t, N, V, s);
  f(view.data(), static_cast<std::size_t>(N * V), t);
  copy_rows(rows, ld, t, view.data(), V, t, N, V, s);
}

}  // namespace

std::size_t CudaBackend::classifier_state_bytes(long N, long V) const {
  return dtype_bytes(compute_) * static_cast<std::size_t>(N) * static_cast<std::size_t>(padded_vocab(V));
}

void CudaBackend::classifier_forward(void* state, float* losses, const void* x, const void* w,
                                     const std::int32_t* targets, long N, long C, long V, ClassifierTap* tap,
                                     float* logits_copy) {
  const VocabSplit v = split_of(V);
  // logits[N, Vp] = x W^T: the whole-tile rows of W, then the padded tail block.
  MatmulArgs g;
  g.trans_b = true, g.m = N, g.k = C;
  g.a = x, g.a_type = compute_, g.lda = C;
  g.b_type = compute_, g.ldb = C;
  g.c_type = compute_, g.ldc = v.padded;
  if (v.whole > 0) {
    g.n = v.whole, g.b = w, g.c = state;
    matmul_->run(g);
  }
  if (v.tail > 0) {
    const Buffer tail = padded_tail(*this, w, v, C, compute_, stream_);
    g.n = v.tail, g.b = tail.data(), g.c = at(state, v.whole, compute_);
    matmul_->run(g);
  }
  if (tap)
    through_compact_view(*this, state, N, V, v.padded, compute_, stream_,
                         [&](void* view, std::size_t n, DType t) { tap->logits(view, n, t); });
  if (logits_copy) {
    Buffer f32 = device_.allocate(MemoryCategory::workspace, sizeof(float) * static_cast<std::size_t>(N * V));
    copy_rows(f32.data(), V, DType::f32, state, v.padded, compute_, N, V, stream_);
    download(logits_copy, f32.data(), f32.bytes());
  }
  classifier_softmax_xent(losses, state, targets, N, V, v.padded, compute_, stream_);
  if (tap) tap->losses(losses, static_cast<std::size_t>(N));
}

void CudaBackend::classifier_backward(void* dx, float* dw, void* state, const void* x, const void* w,
                                      const std::int32_t* /*targets*/, long N, long C, long V, float scale,
                                      ClassifierTap* tap) {
  // state holds softmax - onehot (the forward's fused pass); the gradient is scale times it.
  const VocabSplit v = split_of(V);
  float alpha = scale;
  if (tap) {
    // The tap sees the gradient itself, as on the CPU: scale it in place first.
    cuda::scale(state, compute_, static_cast<std::size_t>(N * v.padded), scale, stream_);
    alpha = 1.0f;
    through_compact_view(*this, state, N, V, v.padded, compute_, stream_,
                         [&](void* view, std::size_t n, DType t) { tap->logits_grad(view, n, t); });
  }
  const void* tail_of_state = at(state, v.whole, compute_);
  Buffer tail_w;
  if (v.tail > 0) tail_w = padded_tail(*this, w, v, C, compute_, stream_);

  // dx[N, C] = alpha dlogits[N, Vp] W_padded[Vp, C], over the two parts of the vocabulary.
  MatmulArgs g;
  g.m = N, g.n = C, g.alpha = alpha;
  g.a_type = compute_, g.lda = v.padded;
  g.b_type = compute_, g.ldb = C;
  g.c = dx, g.c_type = compute_, g.ldc = C;
  if (v.whole > 0) {
    g.k = v.whole, g.a = state, g.b = w;
    matmul_->run(g);
  }
  if (v.tail > 0) {
    g.k = v.tail, g.a = tail_of_state, g.b = tail_w.data(), g.beta = v.whole > 0 ? 1.0f : 0.0f;
    matmul_->run(g);
  }

  // dW[V, C] += alpha dlogits^T x: the whole rows in place, the tail through float32 scratch.
  MatmulArgs d;
  d.trans_a = true, d.n = C, d.k = N, d.alpha = alpha;
  d.a_type = compute_, d.lda = v.padded;
  d.b = x, d.b_type = compute_, d.ldb = C;
  d.c_type = DType::f32, d.ldc = C;
  if (v.whole > 0) {
    d.m = v.whole, d.a = state, d.c = dw, d.beta = 1.0f;
    matmul_->run(d);
  }
  if (v.tail > 0) {
    Buffer rows = device_.allocate(MemoryCategory::workspace, sizeof(float) * static_cast<std::size_t>(v.tail * C));
    d.m = v.tail, d.a = tail_of_state, d.c = rows.data(), d.beta = 0.0f;
    matmul_->run(d);
    add_to(dw + v.whole * C, rows.f32(), static_cast<std::size_t>((V - v.whole) * C), stream_);
  }
}

}  // namespace fsdp::cuda
