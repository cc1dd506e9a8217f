// runs/<run-id>/run.json (core/schemas/run-manifest.schema.json), kept current by rank 0: status,
// step, updated, end_reason. `fsdp-train` writes it first (status "starting", the command, the
// launcher's pid); when the runtime is started directly it creates it. Every write is atomic.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsdp {

class RunManifest {
 public:
  /** Reads DIR/run.json, or starts one for a run the runtime was asked to run directly. */
  RunManifest(const std::string& run_dir, const nlohmann::json& resolved_config, int world_size);

  const std::string& run_id() const { return run_id_; }

  /** Sets fields (merged into the top level) and writes the file. */
  void update(const nlohmann::json& fields);

  /** Adds process ids to `pids` (the job's other ranks on this host), written with the next update. */
  void add_pids(const std::vector<int>& pids);

 private:
  std::string path_, run_id_;
  nlohmann::json doc_;
};

}  // namespace fsdp
