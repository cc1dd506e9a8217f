// Names of the operations inside a block, as diagnostics report them ("layer 3 attn.softmax") and
// as debug.inject_nan.op names them. Forward order; backward visits them in reverse. Outside the
// blocks: "embed" (layer "embedding"), "ln_f", "lm_head" and "softmax_xent" (layer "head").
#pragma once
#include <array>
#include <string_view>
#include <vector>

#include "config/run_config.h"

namespace fsdp::ops {

inline constexpr std::array<std::string_view, 9> kBlockOps = {
    "ln1", "attn.qkv", "attn.softmax", "attn.out", "attn.proj", "ln2", "mlp.fc", "mlp.gelu", "mlp.fc2"};

/** Ops that own parameters (what the optimizer phase of inject_nan can name). */
inline constexpr std::array<std::string_view, 6> kParamOps = {"ln1", "attn.qkv", "attn.proj",
                                                              "ln2", "mlp.fc",   "mlp.fc2"};

inline constexpr std::string_view kDefaultForward = "attn.softmax", kDefaultBackward = "mlp.fc2",
                                  kDefaultOptimizer = "attn.qkv";

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view op) {
  for (auto o : list)
    if (o == op) return true;
  return false;
}

// The Llama family's decoder block (model/decoder_block.cc names them so): Qwen3 adds its per-head
// q / k norms before the rotation.
inline constexpr std::array<std::string_view, 12> kDecoderBlockOps = {
    "ln1",      "attn.qkv",  "attn.q_norm", "attn.k_norm", "attn.rope",  "attn.softmax",
    "attn.out", "attn.proj", "ln2",         "mlp.gate_up", "mlp.swiglu", "mlp.down"};
inline constexpr std::array<std::string_view, 8> kDecoderParamOps = {
    "ln1", "attn.qkv", "attn.q_norm", "attn.k_norm", "attn.proj", "ln2", "mlp.gate_up", "mlp.down"};

/** The ops of a block of `arch` (forward order), or those that own parameters. */
inline std::vector<std::string_view> block_ops(Architecture arch, bool with_params_only = false) {
  std::vector<std::string_view> out;
  if (arch == Architecture::gpt2) {
    if (with_params_only) return {kParamOps.begin(), kParamOps.end()};
    return {kBlockOps.begin(), kBlockOps.end()};
  }
  for (auto op : with_params_only ? std::vector<std::string_view>(kDecoderParamOps.begin(), kDecoderParamOps.end())
                                  : std::vector<std::string_view>(kDecoderBlockOps.begin(), kDecoderBlockOps.end()))
    if (arch == Architecture::qwen3 || (op != "attn.q_norm" && op != "attn.k_norm")) out.push_back(op);
  return out;
}

/** debug.inject_nan's backward op when none is named: the block's last product, as mlp.fc2 for GPT-2. */
inline std::string_view default_backward(Architecture arch) {
  return arch == Architecture::gpt2 ? kDefaultBackward : std::string_view("mlp.down");
}

}  // namespace fsdp::ops
