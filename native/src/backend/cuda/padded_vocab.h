// The vocabulary as the CUDA backend's classifier lays out its logits: rows padded to a multiple
// of 128 columns, so the LM head's three products run with every extent and leading dimension
// aligned (Hopper's tensor-core kernels; GPT-2's 50257 would otherwise get align1 kernels). The
// padding lives only in the logits and in scratch: parameters, checkpoints and exports keep V.
// Plain C++: the memory plan counts the padded logits from it on machines without CUDA.
#pragma once

namespace fsdp {

constexpr long kVocabAlignment = 128;

inline long padded_vocab(long V) {
  return (V + kVocabAlignment - 1) / kVocabAlignment * kVocabAlignment;
}

}  // namespace fsdp
