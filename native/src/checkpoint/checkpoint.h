// Checkpoints (native/FORMATS.md): CKPT_DIR/step-NNNNNNNN/ holding one state file per rank
// (rank-NNNNN.bin: magic, version, CRC-32 of the payload; the trainer's state, then each unit's
// local parameters and AdamW moments) and manifest.json, written last, listing every file with its
// size and CRC. The folder is written under a temporary name, flushed and renamed, so a folder
// named step-* is complete; a truncated or corrupted one is detected before anything is loaded.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/param_layout.h"
#include "parallel/model_state.h"

namespace fsdp {

struct SavedCheckpoint {
  std::string path;  // the step folder
  long step = 0;
  std::uint64_t bytes = 0;
};

/**
 * Writes the checkpoint of `step` under dir: the trainer's state (JSON, inside the checksummed
 * file) and the rank's local state of every unit. Replaces an existing checkpoint of that step.
 */
SavedCheckpoint save_checkpoint(const std::string& dir, long step, const nlohmann::json& trainer_state, const ParamLayout& layout, ModelState& state,
                                int rank = 0, int world_size = 1);

/** Verifies a checkpoint folder whole (manifest, sizes, checksums); returns an empty string or what is wrong with it. */
std::string verify_checkpoint(const std::string& path, int rank = 0);

/** Loads a verified checkpoint into `state`; returns the trainer's state. Throws std::runtime_error naming the path. */
nlohmann::json load_checkpoint(const std::string& path, const ParamLayout& layout, ModelState& state, int rank = 0);

/** Complete checkpoint folders under dir (step-*), newest first. */
std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& dir);

/** Removes complete checkpoints beyond the newest keep_last_n, and temporary folders of unfinished writes. */
void prune_checkpoints(const std::string& dir, int keep_last_n);

}  // namespace fsdp
