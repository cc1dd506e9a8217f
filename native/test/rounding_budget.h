// How far the CUDA backend's bfloat16/float16 results may be from the CPU's float32 ones: one
// derivation for the operation tests (cuda/op_shapes_test.cc) and the model parity test
// (cuda/parity_test.cc), from the compute dtype's unit roundoff u (2^-8 bfloat16, 2^-11 float16).
//
// One operation, given the same 16-bit inputs on both sides, differs from the CPU's result rounded
// to the dtype by the roundings of its output only: k·u in relative L2, k the roundings it makes
// (kRoundings below: 1 for most, 2 where a 16-bit intermediate is rounded again on the way). That
// is the op tests' bound.
//
// A model step composes the operations (model/block.cc), every output rounded. Summing their k·u
// (8 (L + 1) u before: 9.4% in bfloat16 at L = 2) treats every rounding as the worst case and all of
// them as pointing the same way. Round-to-nearest errors are unbiased and independent from one
// rounding to the next, so their sum grows like the square root of their number (Higham & Mary, "A
// New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019): the
// expected relative L2 error of the composition is about u·sqrt(Σ k² / 3). The bound the tests use
// is twice the root-sum-square, 2u·sqrt(Σ k²), the factor 2·sqrt(3) ≈ 3.5 left for what the
// operations amplify (LayerNorm's and softmax's sensitivity). Both sides of the parity test get the
// same 16-bit parameters (the GPU's compute copy), as the op tests give both the same inputs, so
// only the activations' roundings are counted. rounding_budget_test.cc checks the composition rule
// on the CPU, with real bfloat16/float16 roundings of a residual network of the same operations.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace fsdp::test::rounding {

inline double unit_roundoff(DType t) {
  return t == DType::bf16 ? 1.0 / 256 : t == DType::f16 ? 1.0 / 2048 : 0;
}

/** Roundings of each operation's output to the compute dtype (the op tests' factors). */
namespace kRoundings {
constexpr int linear = 1;       // cuBLASLt's product, bias in the epilogue, rounded once
constexpr int linear_gelu = 2;  // GELU of a pre-activation the epilogue may have rounded
constexpr int attention = 2;    // P rounded to the dtype before P V (tensor cores), then y
constexpr int layernorm = 1;
constexpr int residual = 1;            // residual + dropout
constexpr int residual_layernorm = 2;  // the rounded sum, then its LayerNorm
constexpr int gelu = 1;
constexpr int dropout = 1;
constexpr int embedding = 1;
constexpr int logits = 1;              // the classifier keeps its logits in the dtype
constexpr int linear_backward = 1;     // dx (weight and bias gradients are float32 sums)
constexpr int attention_backward = 2;  // dS rounded before dS K / dSᵀ Q, then dqkv
constexpr int layernorm_backward = 1;
constexpr int gelu_backward = 1;
constexpr int logits_backward = 1;  // softmax - onehot, in place in the dtype
}  // namespace kRoundings

/** The operations a step composes, each with its roundings, in order. */
struct Path {
  std::vector<std::pair<std::string, int>> ops;
  void add(const std::string& op, int roundings) { ops.emplace_back(op, roundings); }
  int linear_sum() const {
    int s = 0;
    for (const auto& o : ops) s += o.second;
    return s;
  }
  double root_sum_square() const {
    double s = 0;
    for (const auto& o : ops) s += static_cast<double>(o.second) * o.second;
    return std::sqrt(s);
  }
  /** The relative-L2 bound in dtype t: 2 u sqrt(Σ k²). */
  double bound(DType t) const { return 2.0 * unit_roundoff(t) * root_sum_square(); }
};

/** The forward of a GPT with L blocks up to its logits, as model/gpt.cc and model/block.cc compose it. */
inline Path forward_path(int L) {
  namespace k = kRoundings;
  Path p;
  p.add("embedding", k::embedding);
  for (int i = 0; i < L; ++i) {
    const std::string b = "block " + std::to_string(i) + " ";
    p.add(b + "ln1", k::layernorm);
    p.add(b + "qkv", k::linear);
    p.add(b + "attention", k::attention);
    p.add(b + "proj", k::linear);
    p.add(b + "residual + ln2", k::residual_layernorm);
    p.add(b + "fc + GELU", k::linear_gelu);
    p.add(b + "fc2", k::linear);
    p.add(b + "residual", k::residual);
  }
  p.add("ln_f", k::layernorm);
  p.add("logits", k::logits);
  return p;
}

/** The forward, then the backward down to the first block's parameters (their gradients are the longest path). */
inline Path gradient_path(int L) {
  namespace k = kRoundings;
  Path p = forward_path(L);
  p.add("logits backward", k::logits_backward);
  p.add("ln_f backward", k::layernorm_backward);
  for (int i = L - 1; i >= 0; --i) {
    const std::string b = "block " + std::to_string(i) + " ";
    p.add(b + "fc2 backward", k::linear_backward);
    p.add(b + "GELU backward", k::gelu_backward);
    p.add(b + "fc backward", k::linear_backward);
    p.add(b + "ln2 backward", k::layernorm_backward);
    p.add(b + "residual gradient", k::residual);
    p.add(b + "proj backward", k::linear_backward);
    p.add(b + "attention backward", k::attention_backward);
    p.add(b + "qkv backward", k::linear_backward);
    p.add(b + "ln1 backward", k::layernorm_backward);
  }
  return p;
}

}  // namespace fsdp::test::rounding
