// Checkpoints (native/FORMATS.md): CKPT_DIR/step-NNNNNNNN/ holding one state file per rank that
// owns part of the model (rank-NNNNN.bin: magic, version, CRC-32 of the payload; the trainer's
// state, then the parameters and AdamW moments of each unit's range the rank owns) and
// manifest.json, written last by rank 0, listing every file with its size and CRC. The folder is
// written under a temporary name, flushed and renamed, so a folder named step-* is complete; a
// truncated or corrupted one is detected before anything is loaded. A checkpoint loads into any
// world size and strategy: each rank reads its ranges from whichever files hold them (resharding).
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
 * Writes the checkpoint of `step` under dir: the trainer's state (JSON, inside rank 0's checksummed
 * file) and every rank's owned ranges (ModelState::owned). Replaces an existing checkpoint of that
 * step. A collective over state.collectives(): every rank calls it; all of them throw if one fails.
 */
SavedCheckpoint save_checkpoint(const std::string& dir, long step, const nlohmann::json& trainer_state,
                                const ParamLayout& layout, ModelState& state);

/** Verifies a checkpoint folder whole (manifest, sizes, checksums); returns an empty string or what is wrong with it.
 */
std::string verify_checkpoint(const std::string& path);

/**
 * Loads a checkpoint saved by any number of ranks into `state`: each rank reads its local ranges
 * from the files that hold them, after checking those files; then the parameters are published
 * (ModelState::publish_params). Returns the trainer's state. A collective like save_checkpoint;
 * throws std::runtime_error naming the path, having changed nothing, when it cannot load.
 */
nlohmann::json load_checkpoint(const std::string& path, const ParamLayout& layout, ModelState& state);

/** Writes the checkpoint at `path` (any world size) as one full checkpoint of world size 1 under out_dir
 * (out_dir/step-N). */
SavedCheckpoint export_checkpoint(const std::string& path, const std::string& out_dir);

/** Complete checkpoint folders under dir (step-*), newest first. */
std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& dir);

/** Removes complete checkpoints beyond the newest keep_last_n, and temporary folders of unfinished writes. */
void prune_checkpoints(const std::string& dir, int keep_last_n);

/**
 * Removes the temporary folders of writes that never finished (.tmp-*, .old-*: a process killed
 * or a disk that filled while saving). One trainer writes a run folder at a time (its lock), so
 * every such folder is stale; left behind, one can hold the disk full for every later save.
 */
void remove_unfinished_writes(const std::string& dir);

}  // namespace fsdp
