// Which activation checkpointing policy a run gets: the one its config names, or for auto the
// candidate with the least recomputation whose planned memory fits memory_budget_gb. A decision
// of the memory plan (it plans every candidate), about a type of the model (model/activation_policy.h).
#pragma once
#include <string>
#include <vector>

#include "config/run_config.h"
#include "model/activation_policy.h"

namespace fsdp {

/** Candidates auto chooses from, in increasing order of recomputation. */
std::vector<ActivationPolicy> policy_candidates(const ModelShape& s, long long T);

/**
 * The policy the config asks for. For auto, the least recomputation whose planned device total
 * fits memory_budget_gb; `problem` is set (and the smallest plan returned) when none fits.
 */
ActivationPolicy resolve_activation_policy(const RunConfig& c, std::string* problem = nullptr);

}  // namespace fsdp
