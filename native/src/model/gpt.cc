#include "model/gpt.h"

#include <stdexcept>
#include <string>

#include "model/block.h"
#include "model/embedding.h"
#include "model/layernorm.h"
#include "model/loss.h"
#include "runtime/rng.h"

namespace fsdp {

std::uint64_t dropout_site_key(std::uint64_t micro_batch_key, int site) {
  return derive_key(micro_batch_key, static_cast<std::uint64_t>(site));
}

Gpt::Gpt(Backend& be, const ParamLayout& layout, UnitStorage& storage, float dropout, ActivationPolicy policy)
    : be_(be), layout_(layout), storage_(storage), dropout_(dropout), policy_(std::move(policy)) {
  // A Llama-family layout has no LayerNorm biases or position table: GPT-2's forward would find no
  // such segment. make_model builds the Decoder for those; this guards a caller that skips it.
  if (layout.shape.llama_family())
    throw std::invalid_argument(std::string("model.architecture: ") + architecture_name(layout.shape.arch) +
                                ": GPT-2's model cannot run it (make_model builds the family's Decoder)");
  if (policy_.blocks.size() != static_cast<std::size_t>(layout.shape.L))
    throw std::invalid_argument("activation policy does not match the model's blocks");
}

namespace {

struct HeadParams {
  const void *ln_w, *ln_b, *lm;  // compute dtype
  float *dln_w, *dln_b, *dlm;
};

const void* offset_by(const void* base, std::size_t elements, DType t) {
  return static_cast<const char*>(base) + elements * dtype_bytes(t);
}

/** The head's parameters (compute dtype), and with_grads their gradients (which exist only in backward under sharded
 * gradients). */
HeadParams head_params(const ParamLayout& layout, UnitStorage& storage, DType t, bool with_grads) {
  const UnitLayout& head = layout.units[layout.head_unit()];
  const int lm_unit = layout.shape.tied ? layout.embedding_unit() : layout.head_unit();
  const std::size_t lm_offset =
      layout.shape.tied ? layout.units[0].segment("embedding.wte").offset : head.segment("lm_head.weight").offset;
  const void* p = storage.compute_params(layout.head_unit());
  HeadParams hp{offset_by(p, head.segment("final_ln.weight").offset, t),
                offset_by(p, head.segment("final_ln.bias").offset, t),
                offset_by(storage.compute_params(lm_unit), lm_offset, t),
                nullptr,
                nullptr,
                nullptr};
  if (with_grads) {
    float* g = storage.grads(layout.head_unit());
    hp.dln_w = g + head.segment("final_ln.weight").offset;
    hp.dln_b = g + head.segment("final_ln.bias").offset;
    hp.dlm = storage.grads(lm_unit) + lm_offset;
  }
  return hp;
}

EmbeddingWeights embedding_weights(const ParamLayout& layout, UnitStorage& storage, DType t) {
  const UnitLayout& e = layout.units[layout.embedding_unit()];
  const void* p = storage.compute_params(layout.embedding_unit());
  return {offset_by(p, e.segment("embedding.wte").offset, t), offset_by(p, e.segment("embedding.wpe").offset, t)};
}

}  // namespace

double Gpt::forward_backward(const Batch& batch, float grad_scale, std::uint64_t dropout_key, StepProbe* probe) {
  const ModelShape& s = layout_.shape;
  const Dims d{batch.B, batch.T, s.C, s.H, s.F, s.V};
  const long N = d.N(), C = d.C;
  const int L = static_cast<int>(s.L), emb = layout_.embedding_unit(), head = layout_.head_unit();
  Allocator& alloc = be_.allocator();
  const DType act = be_.compute_dtype();
  const DeviceTokens tokens(be_, batch);
  // Every dropout site masks N C elements; this batch's start in its global batch offsets them.
  const std::uint64_t skip = static_cast<std::uint64_t>(batch.first_sequence) * static_cast<std::uint64_t>(batch.T * C);
  auto site_key = [&](int site) { return advance_key(dropout_site_key(dropout_key, site), skip); };
  auto run_of = [&](int i) {
    const int u = layout_.block_unit(i);
    return BlockRun{be_,
                    d,
                    dropout_,
                    site_key(1 + 2 * i),
                    site_key(2 + 2 * i),
                    LayerProbe(probe, i, &layout_.units[u], storage_.grads(u), act)};
  };
  auto weights_of = [&](int u) { return block_weights(layout_.units[u], storage_.compute_params(u), act); };

  // Forward: the residual stream res[0..L] and each block's saved internals.
  std::vector<Buffer> res(L + 1);
  std::vector<BlockSaved> saved(L);
  storage_.pre_forward(emb);
  {
    res[0] = alloc.allocate(MemoryCategory::activations, compute_bytes(be_, N * C));
    embedding_forward(be_, res[0].data(), tokens.inputs(), embedding_weights(layout_, storage_, act), d.B, d.T, C,
                      dropout_, site_key(0));
    LayerProbe(probe, -1, &layout_.units[emb], storage_.grads(emb), act).forward("embed", res[0].data(), N * C);
  }
  storage_.post_forward(emb);
  for (int i = 0; i < L; ++i) {
    const int u = layout_.block_unit(i);
    storage_.pre_forward(u);
    res[i + 1] = block_forward(run_of(i), saved[i], res[i].data(), weights_of(u), policy_.blocks[i]);
    storage_.post_forward(u);
  }
  storage_.pre_forward(head);
  HeadParams hp = head_params(layout_, storage_, act, false);
  LayerNormSaved lnf;
  layernorm_forward(be_, lnf, res[L].data(), hp.ln_w, hp.ln_b, N, C);
  LayerProbe(probe, L, &layout_.units[head], nullptr, act).forward("ln_f", lnf.out.data(), N * C);
  LossSaved loss_saved;
  const double loss = loss_forward(be_, loss_saved, lnf.out.data(), hp.lm, tokens.targets(), d,
                                   LayerProbe(probe, L, &layout_.units[head], nullptr, act));
  storage_.post_forward(head);

  // Backward.
  BackwardWorkspace ws(be_, d);
  storage_.pre_backward(head);
  hp = head_params(layout_, storage_, act, true);
  const LayerProbe head_probe(probe, L, &layout_.units[head], storage_.grads(head), act);
  loss_backward(be_, ws.tmp_b.data(), hp.dlm, loss_saved, lnf.out.data(), hp.lm, tokens.targets(), grad_scale, d,
                head_probe);
  head_probe.backward_in("ln_f", ws.tmp_b.data(), N * C);
  be_.zero(ws.d_res.data(), ws.d_res.bytes());
  layernorm_backward(be_, ws.d_res.data(), hp.dln_w, hp.dln_b, ws.tmp_b.data(), res[L].data(), lnf, hp.ln_w, N, C);
  head_probe.backward_out("ln_f", ws.d_res.data(), N * C);
  loss_saved.reset();
  lnf.reset();
  res[L].reset();
  storage_.post_backward(head);
  for (int i = L - 1; i >= 0; --i) {
    const int u = layout_.block_unit(i);
    storage_.pre_backward(u);
    const BlockRun run = run_of(i);
    const BlockWeights w = weights_of(u);
    block_recompute(run, saved[i], res[i].data(), w, policy_.blocks[i]);
    block_backward(run, ws, saved[i], res[i].data(), w, block_params(layout_.units[u], storage_.grads(u)));
    saved[i].reset();
    res[i].reset();
    storage_.post_backward(u);
  }
  storage_.pre_backward(emb);
  {
    const UnitLayout& e = layout_.units[emb];
    float* g = storage_.grads(emb);
    const LayerProbe emb_probe(probe, -1, &e, g, act);
    emb_probe.backward_in("embed", ws.d_res.data(), N * C);
    embedding_backward(be_, {g + e.segment("embedding.wte").offset, g + e.segment("embedding.wpe").offset},
                       ws.d_res.data(), tokens.inputs(), d.B, d.T, C, dropout_, site_key(0));
    emb_probe.backward_out("embed", nullptr, 0);
  }
  storage_.post_backward(emb);
  return loss;
}

double Gpt::evaluate(const Batch& batch, float* logits) {
  const ModelShape& s = layout_.shape;
  const Dims d{batch.B, batch.T, s.C, s.H, s.F, s.V};
  const long N = d.N(), C = d.C;
  const int L = static_cast<int>(s.L), emb = layout_.embedding_unit(), head = layout_.head_unit();
  const DType act = be_.compute_dtype();
  const LayerProbe none(nullptr, 0, nullptr, nullptr, act);
  const DeviceTokens tokens(be_, batch);
  storage_.pre_forward(emb);
  Buffer x = be_.allocator().allocate(MemoryCategory::activations, compute_bytes(be_, N * C));
  embedding_forward(be_, x.data(), tokens.inputs(), embedding_weights(layout_, storage_, act), d.B, d.T, C, 0.0f, 0);
  storage_.post_forward(emb);
  for (int i = 0; i < L; ++i) {
    const int u = layout_.block_unit(i);
    storage_.pre_forward(u);
    BlockSaved saved;
    x = block_forward({be_, d, 0.0f, 0, 0, none}, saved, x.data(),
                      block_weights(layout_.units[u], storage_.compute_params(u), act), BlockRecompute::full);
    storage_.post_forward(u);
  }
  storage_.pre_forward(head);
  const HeadParams hp = head_params(layout_, storage_, act, false);
  LayerNormSaved lnf;
  layernorm_forward(be_, lnf, x.data(), hp.ln_w, hp.ln_b, N, C);
  x.reset();
  LossSaved loss_saved;
  const double loss = loss_forward(be_, loss_saved, lnf.out.data(), hp.lm, tokens.targets(), d, none, logits);
  storage_.post_forward(head);
  return loss;
}

}  // namespace fsdp
