// Names of the operations inside a block, as diagnostics report them ("layer 3 attn.softmax") and
// as debug.inject_nan.op names them. Forward order; backward visits them in reverse. Outside the
// blocks: "embed" (layer "embedding"), "ln_f", "lm_head" and "softmax_xent" (layer "head").
#pragma once
#include <array>
#include <string_view>

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

}  // namespace fsdp::ops
