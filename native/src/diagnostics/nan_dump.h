// The diagnostic dump of a non-finite step: DIR/diagnostics/step-NNNNNNNN-nan.json with the step,
// where the value first appeared, the batch's token ids, and per-op statistics of activations and
// gradients (mean, std, max |x|, count of non-finite values) from the re-run with checks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/step_inspector.h"

namespace fsdp {

struct NanDump {
  long step = 0;
  nlohmann::json where;
  std::vector<std::vector<std::int32_t>> batches;  // the step's micro-batches' input token ids
  std::vector<OpStats> stats;
  int n_layers = 0;
};

/** Writes the dump under run_dir/diagnostics/; returns its path relative to run_dir. */
std::string write_nan_dump(const std::string& run_dir, const NanDump& dump);

}  // namespace fsdp
