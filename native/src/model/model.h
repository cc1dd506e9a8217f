// The language model the trainer runs, whatever its architecture: one interface, two
// implementations — Gpt (GPT-2: learned positions, LayerNorm, GELU, dropout; gpt.h) and Decoder
// (the Llama family: RoPE, RMSNorm, SwiGLU, grouped-query attention; decoder.h). The trainer, the
// evaluation loop, the smoke step and the `logits` command hold a Model made by make_model and never
// ask which architecture it is, so a third family is one more implementation, not branches in the
// trainer. Every implementation reaches its parameters through UnitStorage, calling its hooks around
// each unit, and knows nothing of sharding; activation lifetimes follow native/MEMORY.md.
#pragma once
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "config/run_config.h"
#include "model/activation_policy.h"
#include "model/param_layout.h"
#include "model/probe.h"
#include "model/unit_storage.h"
#include "runtime/allocator.h"

namespace fsdp {

/** One micro-batch of token ids: inputs[B*T] and the next tokens, targets[B*T]. */
struct Batch {
  const std::int32_t* inputs = nullptr;
  const std::int32_t* targets = nullptr;
  long B = 0, T = 0;
  /**
   * Where the batch's first sequence sits in the global batch it is part of (rank x B with several
   * ranks). Dropout masks are drawn by position in the global batch, so they do not depend on
   * how a global batch is split across ranks.
   */
  long first_sequence = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  /**
   * Forward and backward of one micro-batch. Gradients of grad_scale x the mean loss accumulate
   * into the storage's gradient buffers. Dropout masks (where the architecture has dropout) are
   * keyed by dropout_key (one per micro-batch). Returns the micro-batch's mean loss.
   */
  virtual double forward_backward(const Batch& batch, float grad_scale, std::uint64_t dropout_key,
                                  StepProbe* probe = nullptr) = 0;

  /** Mean loss without gradients and without dropout (evaluation); copies logits[B*T, V] out when given. */
  virtual double evaluate(const Batch& batch, float* logits = nullptr) = 0;

  virtual const ParamLayout& layout() const = 0;
  virtual const ActivationPolicy& policy() const = 0;
};

/**
 * The model of `m`'s architecture over `layout` (ParamLayout::of(ModelShape::of(m))) and `storage`.
 * GPT-2 takes m.dropout; the Llama family takes rms_norm_eps, rope_theta and rope_scaling.
 */
std::unique_ptr<Model> make_model(Backend& be, const ParamLayout& layout, UnitStorage& storage, const ModelConfig& m,
                                  ActivationPolicy policy);

/** The micro-batch's token ids where the backend reads them: as given on the CPU, copied to the GPU. */
class DeviceTokens {
 public:
  DeviceTokens(Backend& be, const Batch& batch);
  const std::int32_t* inputs() const { return inputs_; }
  const std::int32_t* targets() const { return targets_; }

 private:
  Buffer ids_;
  const std::int32_t *inputs_ = nullptr, *targets_ = nullptr;
};

}  // namespace fsdp
