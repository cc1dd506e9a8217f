// The Llama-family implementation of Model (model.h): Llama 3, Qwen3, Mistral, SmolLM2 as
// transformers' LlamaForCausalLM / Qwen3ForCausalLM compute them (/work/team/decoder-layout.md):
// token embedding (wte only: positions are RoPE's), L pre-norm decoder blocks (decoder_block.h),
// the final RMSNorm, the tied or untied LM head with GPT-2's fused classifier and loss. RoPE's
// inv_freq (rope_theta, llama3 scaling) is computed once here. No dropout: the family trains
// without it (the schema refuses model.dropout for it). Like Gpt it reaches its parameters through
// UnitStorage and its hooks only, so every sharding strategy and offload runs it unchanged; the
// activation policy's per-block BlockRecompute applies to its blocks; probes name layer and op.
#pragma once
#include <vector>

#include "model/decoder_block.h"
#include "model/model.h"

namespace fsdp {

/** The math the shape does not carry: the config's norm epsilon and rotary embedding. */
struct DecoderMath {
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000;
  RopeScalingConfig rope_scaling;
  static DecoderMath of(const ModelConfig& m);
};

/**
 * inv_freq[j] = rope_theta^(-2j / D) for j < D / 2, rescaled for rope_type llama3 exactly as
 * transformers' _compute_llama3_parameters; computed in double and rounded once to float32
 * (transformers forms it in float32: at most an ulp apart). Throws for an odd D or an unknown rope_type.
 */
std::vector<float> rope_inv_freq(const DecoderMath& math, long long D);

class Decoder final : public Model {
 public:
  Decoder(Backend& be, const ParamLayout& layout, UnitStorage& storage, const DecoderMath& math,
          ActivationPolicy policy);

  /** dropout_key is unused: the family has no dropout. */
  double forward_backward(const Batch& batch, float grad_scale, std::uint64_t dropout_key,
                          StepProbe* probe = nullptr) override;
  double evaluate(const Batch& batch, float* logits = nullptr) override;

  const ParamLayout& layout() const override { return layout_; }
  const ActivationPolicy& policy() const override { return policy_; }

 private:
  DecoderDims dims(const Batch& batch) const;

  Backend& be_;
  const ParamLayout& layout_;
  UnitStorage& storage_;
  DecoderMath math_;
  ActivationPolicy policy_;
  Buffer inv_freq_;  // [D / 2] float32 in the backend's memory
};

}  // namespace fsdp
