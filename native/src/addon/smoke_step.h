// One forward and backward of the configured model on a tiny random batch: proof, for the editor,
// that the runtime builds and runs this model here, with its loss and timings. Parameters and
// gradients only (no optimizer state, no data files): it is not training.
#pragma once
#include <nlohmann/json.hpp>

#include "config/run_config.h"

namespace fsdp {

/**
 * {loss, expected_loss (ln V: what an untrained model should give), grad_norm, init_ms,
 * forward_backward_ms, tokens, n_params, mem_peak, backend, threads}. Throws std::runtime_error
 * when this build cannot run the config.
 */
nlohmann::json smoke_step(const RunConfig& config, long max_tokens = 16);

}  // namespace fsdp
