// Shared pieces of the native tests: a small model on the fast path, its parameters copied to the
// reference path, random tokens, and a finite-difference gradient check.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "model/param_layout.h"
#include "parallel/replicated_state.h"
#include "reference/reference_gpt.h"
#include "runtime/rng.h"

namespace fsdp::test {

inline ModelShape small_shape(long long V = 11, long long C = 8, long long L = 2, long long H = 2, long long S = 6,
                              bool tied = true) {
  ModelShape s;
  s.V = V, s.C = C, s.L = L, s.H = H, s.F = 4 * C, s.S = S, s.tied = tied;
  return s;
}

/** Random token ids below V: inputs and targets of B sequences of T. */
struct RandomTokens {
  std::vector<std::int32_t> inputs, targets;
  long B, T;
  RandomTokens(long b, long t, long long V, std::uint64_t seed) : inputs(b * t), targets(b * t), B(b), T(t) {
    const CounterRng rng(seed);
    for (long i = 0; i < b * t; ++i) {
      inputs[i] = static_cast<std::int32_t>(rng.bits(2 * i) % V);
      targets[i] = static_cast<std::int32_t>(rng.bits(2 * i + 1) % V);
    }
  }
  Batch batch() const { return {inputs.data(), targets.data(), B, T}; }
  reference::Tokens tokens() const { return {inputs.data(), targets.data(), B, T}; }
};

/** The fast path on one process: CPU backend, replicated units, a GPT over them. */
struct FastModel {
  CpuBackend be;
  ParamLayout layout;
  std::unique_ptr<ReplicatedState> state;
  std::unique_ptr<Gpt> gpt;

  /** With `bf16_gemm`, every matrix product takes bf16 operands (backend/cpu/bf16_gemm.h). */
  FastModel(const ModelShape& s, float dropout = 0, ActivationPolicy policy = {}, std::uint32_t seed = 7,
            double init_std = 0.2, bool bf16_gemm = false)
      : be(bf16_gemm), layout(ParamLayout::of(s)) {
    state = std::make_unique<ReplicatedState>(be, layout);
    if (policy.blocks.empty()) policy = ActivationPolicy::none(static_cast<int>(s.L));
    gpt = std::make_unique<Gpt>(be, layout, *state, dropout, policy);
    for (int u = 0; u < state->unit_count(); ++u)
      init_unit_range(layout.units[u], 0, layout.units[u].numel, state->params(u), seed, init_std, s.L);
  }

  template <class R>
  reference::Units<R> params_as() const {
    reference::Units<R> out;
    for (int u = 0; u < state->unit_count(); ++u)
      out.emplace_back(state->params(u), state->params(u) + layout.units[u].numel);
    return out;
  }
  reference::Units<double> grads_as_double() const {
    reference::Units<double> out;
    for (int u = 0; u < state->unit_count(); ++u)
      out.emplace_back(state->grads(u), state->grads(u) + layout.units[u].numel);
    return out;
  }
};

/** ||a - b|| / max(||a||, ||b||): the relative error of one tensor. */
template <class A, class B>
double relative_error(const A& a, const B& b) {
  double diff = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - static_cast<double>(b[i])) *
            (static_cast<double>(a[i]) - static_cast<double>(b[i]));
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  const double denom = std::sqrt(std::max(na, nb));
  return denom == 0 ? std::sqrt(diff) : std::sqrt(diff) / denom;
}

/** Central finite differences of f with respect to every element of x. */
inline std::vector<double> numeric_gradient(std::vector<double>& x, const std::function<double()>& f, double h = 1e-5) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = f();
    x[i] = keep - h;
    const double down = f();
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

inline std::vector<double> random_vector(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  const CounterRng rng(seed);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * rng.normal(i);
  return v;
}

}  // namespace fsdp::test
