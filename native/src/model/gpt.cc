#include "model/gpt.h"

#include <stdexcept>

#include "model/block.h"
#include "model/embedding.h"
#include "model/layernorm.h"
#include "model/loss.h"
#include "runtime/rng.h"

namespace fsdp {

std::uint64_t dropout_site_key(std::uint64_t micro_batch_key, int site) { return derive_key(micro_batch_key, static_cast<std::uint64_t>(site)); }

Gpt::Gpt(Backend& be, const ParamLayout& layout, UnitStorage& storage, float dropout, ActivationPolicy policy)
    : be_(be), layout_(layout), storage_(storage), dropout_(dropout), policy_(std::move(policy)) {
  if (policy_.blocks.size() != static_cast<std::size_t>(layout.shape.L)) throw std::invalid_argument("activation policy does not match the model's blocks");
}

namespace {

struct HeadParams {
  const float *ln_w, *ln_b, *lm;
  float *dln_w, *dln_b, *dlm;
};

/** The head's parameters, and with_grads their gradients (which exist only in backward under sharded gradients). */
HeadParams head_params(const ParamLayout& layout, UnitStorage& storage, bool with_grads) {
  const UnitLayout& head = layout.units[layout.head_unit()];
  const int lm_unit = layout.shape.tied ? layout.embedding_unit() : layout.head_unit();
  const std::size_t lm_offset = layout.shape.tied ? layout.units[0].segment("embedding.wte").offset : head.segment("lm_head.weight").offset;
  float* p = storage.params(layout.head_unit());
  HeadParams hp{p + head.segment("final_ln.weight").offset, p + head.segment("final_ln.bias").offset, storage.params(lm_unit) + lm_offset, nullptr, nullptr, nullptr};
  if (with_grads) {
    float* g = storage.grads(layout.head_unit());
    hp.dln_w = g + head.segment("final_ln.weight").offset;
    hp.dln_b = g + head.segment("final_ln.bias").offset;
    hp.dlm = storage.grads(lm_unit) + lm_offset;
  }
  return hp;
}

}  // namespace

double Gpt::forward_backward(const Batch& batch, float grad_scale, std::uint64_t dropout_key, StepProbe* probe) {
  const ModelShape& s = layout_.shape;
  const Dims d{batch.B, batch.T, s.C, s.H, s.F, s.V};
  const long N = d.N(), C = d.C;
  const int L = static_cast<int>(s.L), emb = layout_.embedding_unit(), head = layout_.head_unit();
  Allocator& alloc = be_.allocator();
  // Every dropout site masks N C elements; this batch's start in its global batch offsets them.
  const std::uint64_t skip = static_cast<std::uint64_t>(batch.first_sequence) * static_cast<std::uint64_t>(batch.T * C);
  auto site_key = [&](int site) { return advance_key(dropout_site_key(dropout_key, site), skip); };
  auto run_of = [&](int i) {
    const int u = layout_.block_unit(i);
    return BlockRun{be_, d, dropout_, site_key(1 + 2 * i), site_key(2 + 2 * i), LayerProbe(probe, i, &layout_.units[u], storage_.grads(u))};
  };

  // Forward: the residual stream res[0..L] and each block's saved internals.
  std::vector<Buffer> res(L + 1);
  std::vector<BlockSaved> saved(L);
  storage_.pre_forward(emb);
  {
    const UnitLayout& e = layout_.units[emb];
    const float* p = storage_.params(emb);
    res[0] = alloc.allocate(MemoryCategory::activations, sizeof(float) * N * C);
    embedding_forward(be_, res[0].f32(), batch.inputs, {p + e.segment("embedding.wte").offset, p + e.segment("embedding.wpe").offset}, d.B, d.T, C,
                      dropout_, site_key(0));
    LayerProbe(probe, -1, &e, storage_.grads(emb)).forward("embed", res[0].f32(), N * C);
  }
  storage_.post_forward(emb);
  for (int i = 0; i < L; ++i) {
    const int u = layout_.block_unit(i);
    storage_.pre_forward(u);
    res[i + 1] = block_forward(run_of(i), saved[i], res[i].f32(), block_params<const float>(layout_.units[u], storage_.params(u)), policy_.blocks[i]);
    storage_.post_forward(u);
  }
  storage_.pre_forward(head);
  HeadParams hp = head_params(layout_, storage_, false);
  LayerNormSaved lnf;
  layernorm_forward(be_, lnf, res[L].f32(), hp.ln_w, hp.ln_b, N, C);
  LayerProbe(probe, L, &layout_.units[head], nullptr).forward("ln_f", lnf.out.f32(), N * C);
  LossSaved loss_saved;
  const double loss = loss_forward(be_, loss_saved, lnf.out.f32(), hp.lm, batch.targets, d, LayerProbe(probe, L, &layout_.units[head], nullptr));
  storage_.post_forward(head);

  // Backward.
  BackwardWorkspace ws(alloc, d);
  storage_.pre_backward(head);
  hp = head_params(layout_, storage_, true);
  const LayerProbe head_probe(probe, L, &layout_.units[head], storage_.grads(head));
  loss_backward(be_, ws.tmp_b.f32(), hp.dlm, loss_saved, lnf.out.f32(), hp.lm, batch.targets, grad_scale, d, head_probe);
  head_probe.backward_in("ln_f", ws.tmp_b.f32(), N * C);
  be_.fill(ws.d_res.f32(), N * C, 0.0f);
  layernorm_backward(be_, ws.d_res.f32(), hp.dln_w, hp.dln_b, ws.tmp_b.f32(), res[L].f32(), lnf, hp.ln_w, N, C);
  head_probe.backward_out("ln_f", ws.d_res.f32(), N * C);
  loss_saved.reset();
  lnf.reset();
  res[L].reset();
  storage_.post_backward(head);
  for (int i = L - 1; i >= 0; --i) {
    const int u = layout_.block_unit(i);
    storage_.pre_backward(u);
    const BlockRun run = run_of(i);
    const BlockWeights w = block_params<const float>(layout_.units[u], storage_.params(u));
    block_recompute(run, saved[i], res[i].f32(), w, policy_.blocks[i]);
    block_backward(run, ws, saved[i], res[i].f32(), w, block_params(layout_.units[u], storage_.grads(u)));
    saved[i].reset();
    res[i].reset();
    storage_.post_backward(u);
  }
  storage_.pre_backward(emb);
  {
    const UnitLayout& e = layout_.units[emb];
    float* g = storage_.grads(emb);
    const LayerProbe emb_probe(probe, -1, &e, g);
    emb_probe.backward_in("embed", ws.d_res.f32(), N * C);
    embedding_backward(be_, {g + e.segment("embedding.wte").offset, g + e.segment("embedding.wpe").offset}, ws.d_res.f32(), batch.inputs, d.B, d.T,
                       C, dropout_, site_key(0));
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
  const LayerProbe none(nullptr, 0, nullptr, nullptr);
  storage_.pre_forward(emb);
  Buffer x = be_.allocator().allocate(MemoryCategory::activations, sizeof(float) * N * C);
  {
    const UnitLayout& e = layout_.units[emb];
    const float* p = storage_.params(emb);
    embedding_forward(be_, x.f32(), batch.inputs, {p + e.segment("embedding.wte").offset, p + e.segment("embedding.wpe").offset}, d.B, d.T, C, 0.0f, 0);
  }
  storage_.post_forward(emb);
  for (int i = 0; i < L; ++i) {
    const int u = layout_.block_unit(i);
    storage_.pre_forward(u);
    BlockSaved saved;
    x = block_forward({be_, d, 0.0f, 0, 0, none}, saved, x.f32(), block_params<const float>(layout_.units[u], storage_.params(u)), BlockRecompute::full);
    storage_.post_forward(u);
  }
  storage_.pre_forward(head);
  const HeadParams hp = head_params(layout_, storage_, false);
  LayerNormSaved lnf;
  layernorm_forward(be_, lnf, x.f32(), hp.ln_w, hp.ln_b, N, C);
  x.reset();
  LossSaved loss_saved;
  const double loss = loss_forward(be_, loss_saved, lnf.out.f32(), hp.lm, batch.targets, d, none, logits);
  storage_.post_forward(head);
  return loss;
}

}  // namespace fsdp
