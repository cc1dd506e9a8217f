#include "memory/activation_choice.h"

#include <algorithm>
#include <cstdio>

#include "memory/memory_plan.h"

namespace fsdp {

std::vector<ActivationPolicy> policy_candidates(const ModelShape& s, long long T) {
  const int L = static_cast<int>(s.L);
  std::vector<ActivationPolicy> c{ActivationPolicy::none(L), ActivationPolicy::selective(L)};
  for (int n = L; n >= 1; --n) {
    // Different n with the same number of checkpointed blocks cost the same; keep the first.
    if (n < L && L / n == L / (n + 1)) continue;
    c.push_back(ActivationPolicy::every_n(L, n));
  }
  std::stable_sort(c.begin(), c.end(), [&](const ActivationPolicy& a, const ActivationPolicy& b) {
    return a.recompute_flops_per_token(s, T) < b.recompute_flops_per_token(s, T);
  });
  return c;
}

ActivationPolicy resolve_activation_policy(const RunConfig& c, std::string* problem) {
  const auto& ac = c.activation_checkpointing;
  const int L = c.model.n_layers;
  if (!ac.enabled) return ActivationPolicy::none(L);
  switch (ac.policy) {
    case CheckpointPolicy::every_n:
      return ActivationPolicy::every_n(L, ac.every_n_layers);
    case CheckpointPolicy::selective:
      return ActivationPolicy::selective(L);
    case CheckpointPolicy::automatic:
      break;
  }
  const ModelShape s = ModelShape::of(c.model);
  const auto candidates = policy_candidates(s, c.data.seq_len);
  const double budget = ac.memory_budget_gb * 1073741824.0;
  const ActivationPolicy* smallest = nullptr;
  std::uint64_t smallest_total = 0;
  for (const auto& p : candidates) {
    const std::uint64_t total = plan_memory(c, p).device.total;
    if (budget > 0 && static_cast<double>(total) <= budget) return p;
    if (!smallest || total < smallest_total) smallest = &p, smallest_total = total;
  }
  if (problem) {
    char msg[256];
    if (budget <= 0)
      std::snprintf(msg, sizeof msg, "policy auto needs activation_checkpointing.memory_budget_gb");
    else
      std::snprintf(msg, sizeof msg,
                    "no checkpointing policy fits %.3f GiB per rank: the smallest plan (%s) needs %.3f GiB",
                    ac.memory_budget_gb, smallest->describe().c_str(), smallest_total / 1073741824.0);
    *problem = msg;
  }
  return *smallest;
}

}  // namespace fsdp
