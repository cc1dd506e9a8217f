// The runtime's own checks of a config, beyond what the schema can say: relations between keys,
// what this build can run, and whether the data files are there and fit the model. Front ends show
// these as they are (the addon's validateConfig, the CLI's exit code 2).
#pragma once
#include <vector>

#include "config/run_config.h"

namespace fsdp {

struct ValidateOptions {
  bool check_files = true;  // open the token files' headers
  bool cuda_built = false;  // what this build can run
#ifdef FSDP_MPI_BUILT
  bool mpi_built = true;
#else
  bool mpi_built = false;
#endif
#ifdef FSDP_WITH_NCCL
  bool nccl_built = true;
#else
  bool nccl_built = false;
#endif
};

std::vector<ConfigProblem> validate_run_config(const RunConfig& c, const ValidateOptions& options);

/** Parse and validate in one: type problems first, then semantic ones. */
std::vector<ConfigProblem> check_run_config(const nlohmann::json& value, const std::string& base_dir,
                                            const ValidateOptions& options, RunConfig* out = nullptr);

}  // namespace fsdp
