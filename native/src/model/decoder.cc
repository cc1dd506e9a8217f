#include "model/decoder.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "model/gpt.h"
#include "model/loss.h"

namespace fsdp {

DecoderMath DecoderMath::of(const ModelConfig& m) {
  return {m.rms_norm_eps, m.rope_theta, m.rope_scaling};
}

std::vector<float> rope_inv_freq(const DecoderMath& math, long long D) {
  if (D <= 0 || D % 2 != 0)
    throw std::invalid_argument("model.head_dim: " + std::to_string(D) + " is odd; RoPE turns pairs of channels");
  const RopeScalingConfig& r = math.rope_scaling;
  const bool llama3 = r.rope_type == "llama3";
  if (!llama3 && r.rope_type != "default")
    throw std::invalid_argument("model.rope_scaling.rope_type: " + r.rope_type + " is not default or llama3");
  const double pi = 3.14159265358979323846;
  std::vector<float> inv(static_cast<std::size_t>(D / 2));
  for (long long j = 0; j < D / 2; ++j) {
    double f = 1.0 / std::pow(math.rope_theta, static_cast<double>(2 * j) / static_cast<double>(D));
    if (llama3) {
      // transformers' _compute_llama3_parameters: long wavelengths slowed by `factor`, short ones
      // kept, those between interpolated.
      const double original = r.original_max_position_embeddings;
      const double low_wavelen = original / r.low_freq_factor, high_wavelen = original / r.high_freq_factor;
      const double wavelen = 2 * pi / f;
      const double scaled = wavelen > low_wavelen ? f / r.factor : f;
      if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
        const double smooth = (original / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * scaled / r.factor + smooth * scaled;
      } else {
        f = scaled;
      }
    }
    inv[static_cast<std::size_t>(j)] = static_cast<float>(f);
  }
  return inv;
}

Decoder::Decoder(Backend& be, const ParamLayout& layout, UnitStorage& storage, const DecoderMath& math,
                 ActivationPolicy policy)
    : be_(be), layout_(layout), storage_(storage), math_(math), policy_(std::move(policy)) {
  if (!layout.shape.llama_family())
    throw std::invalid_argument(std::string("model.architecture: ") + architecture_name(layout.shape.arch) +
                                ": the decoder family's model runs llama and qwen3 only (make_model builds Gpt)");
  if (policy_.blocks.size() != static_cast<std::size_t>(layout.shape.L))
    throw std::invalid_argument("activation policy does not match the model's blocks");
  const std::vector<float> inv = rope_inv_freq(math_, layout.shape.D);
  // Held for the model's life, like the data loader's ring: MEMORY.md's "other" (D / 2 floats).
  inv_freq_ = be_.allocator().allocate(MemoryCategory::other, sizeof(float) * inv.size());
  be_.upload(inv_freq_.data(), inv.data(), sizeof(float) * inv.size());
}

DecoderDims Decoder::dims(const Batch& batch) const {
  const ModelShape& s = layout_.shape;
  DecoderDims d;
  d.B = batch.B, d.T = batch.T, d.C = s.C, d.H = s.H, d.KV = s.KV, d.D = s.D, d.F = s.F;
  d.eps = static_cast<float>(math_.rms_norm_eps);
  d.qk_norm = s.qk_norm();
  return d;
}

namespace {

const void* offset_by(const void* base, std::size_t elements, DType t) {
  return static_cast<const char*>(base) + elements * dtype_bytes(t);
}

/** The head's weights (compute dtype) and, with_grads, their gradients (valid in backward only). */
struct DecoderHead {
  const void *ln_w, *lm;
  float *dln_w = nullptr, *dlm = nullptr;
};

DecoderHead decoder_head(const ParamLayout& layout, UnitStorage& storage, DType t, bool with_grads) {
  const UnitLayout& head = layout.units[layout.head_unit()];
  const bool tied = layout.shape.tied;
  const int lm_unit = tied ? layout.embedding_unit() : layout.head_unit();
  const std::size_t lm_offset = tied ? layout.units[layout.embedding_unit()].segment("embedding.wte").offset
                                     : head.segment("lm_head.weight").offset;
  const std::size_t ln_offset = head.segment("final_ln.weight").offset;
  DecoderHead h{offset_by(storage.compute_params(layout.head_unit()), ln_offset, t),
                offset_by(storage.compute_params(lm_unit), lm_offset, t)};
  if (with_grads) {
    h.dln_w = storage.grads(layout.head_unit()) + ln_offset;
    h.dlm = storage.grads(lm_unit) + lm_offset;
  }
  return h;
}

/**
 * x[B*T, C] = wte[tokens]: the backend's embedding op adds a position table, which the family does
 * not have, so it adds a zero one ([T, C], the step's workspace: x + 0 is x exactly).
 */
Buffer embed(Backend& be, const std::int32_t* tokens, const void* wte, long B, long T, long C) {
  Allocator& a = be.allocator();
  Buffer x = a.allocate(MemoryCategory::activations, compute_bytes(be, static_cast<std::size_t>(B * T * C)));
  Buffer zero_positions = a.allocate(MemoryCategory::workspace, compute_bytes(be, static_cast<std::size_t>(T * C)));
  be.zero(zero_positions.data(), zero_positions.bytes());
  be.embedding_forward(x.data(), tokens, wte, zero_positions.data(), B, T, C);
  return x;
}

}  // namespace

double Decoder::forward_backward(const Batch& batch, float grad_scale, std::uint64_t /*dropout_key*/,
                                 StepProbe* probe) {
  const ModelShape& s = layout_.shape;
  const DecoderDims d = dims(batch);
  const Dims hd{d.B, d.T, d.C, d.H, d.F, s.V};  // the classifier's sizes
  const long N = d.N(), C = d.C;
  const int L = static_cast<int>(s.L), emb = layout_.embedding_unit(), head = layout_.head_unit();
  Allocator& alloc = be_.allocator();
  const DType act = be_.compute_dtype();
  const DeviceTokens tokens(be_, batch);
  const UnitLayout& emb_unit = layout_.units[emb];
  const std::size_t wte_offset = emb_unit.segment("embedding.wte").offset;
  auto run_of = [&](int i) {
    const int u = layout_.block_unit(i);
    return DecoderBlockRun{be_, d, inv_freq_.f32(), LayerProbe(probe, i, &layout_.units[u], storage_.grads(u), act)};
  };
  auto weights_of = [&](int u) { return decoder_block_weights(layout_.units[u], storage_.compute_params(u), act); };

  // Forward: the residual stream res[0..L] and each block's saved internals.
  std::vector<Buffer> res(L + 1);
  std::vector<DecoderBlockSaved> saved(L);
  storage_.pre_forward(emb);
  res[0] = embed(be_, tokens.inputs(), offset_by(storage_.compute_params(emb), wte_offset, act), d.B, d.T, C);
  LayerProbe(probe, -1, &emb_unit, storage_.grads(emb), act).forward("embed", res[0].data(), N * C);
  storage_.post_forward(emb);
  for (int i = 0; i < L; ++i) {
    const int u = layout_.block_unit(i);
    storage_.pre_forward(u);
    res[i + 1] = decoder_block_forward(run_of(i), saved[i], res[i].data(), weights_of(u), policy_.blocks[i]);
    storage_.post_forward(u);
  }
  storage_.pre_forward(head);
  DecoderHead hp = decoder_head(layout_, storage_, act, false);
  Buffer lnf = alloc.allocate(MemoryCategory::activations, compute_bytes(be_, N * C));
  Buffer lnf_rstd = alloc.allocate(MemoryCategory::activations, sizeof(float) * N);
  be_.rmsnorm_forward(lnf.data(), lnf_rstd.f32(), res[L].data(), hp.ln_w, N, 1, C, C, d.eps);
  LayerProbe(probe, L, &layout_.units[head], nullptr, act).forward("ln_f", lnf.data(), N * C);
  LossSaved loss_saved;
  const double loss = loss_forward(be_, loss_saved, lnf.data(), hp.lm, tokens.targets(), hd,
                                   LayerProbe(probe, L, &layout_.units[head], nullptr, act));
  storage_.post_forward(head);

  // Backward.
  DecoderWorkspace ws(be_, d);
  storage_.pre_backward(head);
  hp = decoder_head(layout_, storage_, act, true);
  {
    const LayerProbe head_probe(probe, L, &layout_.units[head], storage_.grads(head), act);
    loss_backward(be_, ws.d_norm.data(), hp.dlm, loss_saved, lnf.data(), hp.lm, tokens.targets(), grad_scale, hd,
                  head_probe);
    head_probe.backward_in("ln_f", ws.d_norm.data(), N * C);
    be_.rmsnorm_backward(ws.d_res.data(), false, hp.dln_w, ws.d_norm.data(), res[L].data(), hp.ln_w, lnf_rstd.f32(), N,
                         1, C, C);
    head_probe.backward_out("ln_f", ws.d_res.data(), N * C);
  }
  loss_saved.reset();
  lnf.reset();
  lnf_rstd.reset();
  res[L].reset();
  storage_.post_backward(head);
  for (int i = L - 1; i >= 0; --i) {
    const int u = layout_.block_unit(i);
    storage_.pre_backward(u);
    const DecoderBlockRun run = run_of(i);
    const DecoderBlockWeights w = weights_of(u);
    decoder_block_recompute(run, saved[i], res[i].data(), w, policy_.blocks[i]);
    decoder_block_backward(run, ws, saved[i], res[i].data(), w,
                           decoder_block_params(layout_.units[u], storage_.grads(u)));
    saved[i].reset();
    res[i].reset();
    storage_.post_backward(u);
  }
  storage_.pre_backward(emb);
  {
    float* g = storage_.grads(emb);
    const LayerProbe emb_probe(probe, -1, &emb_unit, g, act);
    emb_probe.backward_in("embed", ws.d_res.data(), N * C);
    // The op's position-table gradient goes to scratch the family drops ([T, C] float32).
    Buffer d_positions = alloc.allocate(MemoryCategory::workspace, sizeof(float) * static_cast<std::size_t>(d.T * C));
    be_.zero(d_positions.data(), d_positions.bytes());
    be_.embedding_backward(g + wte_offset, d_positions.f32(), ws.d_res.data(), tokens.inputs(), d.B, d.T, C);
    emb_probe.backward_out("embed", nullptr, 0);
  }
  storage_.post_backward(emb);
  return loss;
}

double Decoder::evaluate(const Batch& batch, float* logits) {
  const ModelShape& s = layout_.shape;
  const DecoderDims d = dims(batch);
  const Dims hd{d.B, d.T, d.C, d.H, d.F, s.V};
  const long N = d.N(), C = d.C;
  const int L = static_cast<int>(s.L), emb = layout_.embedding_unit(), head = layout_.head_unit();
  const DType act = be_.compute_dtype();
  const LayerProbe none(nullptr, 0, nullptr, nullptr, act);
  const DeviceTokens tokens(be_, batch);
  storage_.pre_forward(emb);
  Buffer x = embed(be_, tokens.inputs(),
                   offset_by(storage_.compute_params(emb), layout_.units[emb].segment("embedding.wte").offset, act),
                   d.B, d.T, C);
  storage_.post_forward(emb);
  for (int i = 0; i < L; ++i) {
    const int u = layout_.block_unit(i);
    storage_.pre_forward(u);
    DecoderBlockSaved saved;
    x = decoder_block_forward({be_, d, inv_freq_.f32(), none}, saved, x.data(),
                              decoder_block_weights(layout_.units[u], storage_.compute_params(u), act),
                              BlockRecompute::full);
    storage_.post_forward(u);
  }
  storage_.pre_forward(head);
  const DecoderHead hp = decoder_head(layout_, storage_, act, false);
  Buffer lnf = be_.allocator().allocate(MemoryCategory::activations, compute_bytes(be_, N * C));
  Buffer lnf_rstd = be_.allocator().allocate(MemoryCategory::activations, sizeof(float) * N);
  be_.rmsnorm_forward(lnf.data(), lnf_rstd.f32(), x.data(), hp.ln_w, N, 1, C, C, d.eps);
  x.reset();
  LossSaved loss_saved;
  const double loss = loss_forward(be_, loss_saved, lnf.data(), hp.lm, tokens.targets(), hd, none, logits);
  storage_.post_forward(head);
  return loss;
}

}  // namespace fsdp
