// The GPT-2 implementation of Model (model.h; DESIGN.md): embeddings, L pre-LN blocks, final LayerNorm, LM head, loss.
// It runs one micro-batch forward and backward over parameters it reaches through UnitStorage, calling the storage's
// hooks around each unit, and knows nothing of sharding. Activation lifetimes follow the timeline of native/MEMORY.md
// exactly.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/param_layout.h"
#include "model/probe.h"
#include "model/unit_storage.h"
#include "model/activation_policy.h"
#include "model/model.h"

namespace fsdp {

class Gpt final : public Model {
 public:
  Gpt(Backend& be, const ParamLayout& layout, UnitStorage& storage, float dropout, ActivationPolicy policy);

  /**
   * Forward and backward of one micro-batch. Gradients of grad_scale x the mean loss accumulate
   * into the storage's gradient buffers. Dropout masks are keyed by dropout_key (one per
   * micro-batch). Returns the micro-batch's mean loss.
   */
  double forward_backward(const Batch& batch, float grad_scale, std::uint64_t dropout_key,
                          StepProbe* probe = nullptr) override;

  /** Mean loss without gradients and without dropout (evaluation); copies logits[B*T, V] out when given. */
  double evaluate(const Batch& batch, float* logits = nullptr) override;

  const ParamLayout& layout() const override { return layout_; }
  const ActivationPolicy& policy() const override { return policy_; }

 private:
  Backend& be_;
  const ParamLayout& layout_;
  UnitStorage& storage_;
  float dropout_;
  ActivationPolicy policy_;
};

/** Dropout key of a site: 0 the embeddings, 1 + 2i block i's attention branch, 2 + 2i its MLP branch. */
std::uint64_t dropout_site_key(std::uint64_t micro_batch_key, int site);

}  // namespace fsdp
