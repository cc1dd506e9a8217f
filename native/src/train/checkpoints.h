// The run's checkpoints, as the loop sees them (torchtitan's CheckpointManager): where they are
// (checkpointing.dir, relative to the run folder), when one is due (every n steps, every m minutes
// by rank 0's clock, at the end of a run, before the first step when a rollback may need one),
// which one a run resumes from (--resume auto: the newest that verifies whole), saving with its
// `checkpoint` event and pruning beyond keep_last_n. The format itself is checkpoint/checkpoint.h.
// Every method that touches a checkpoint is a collective: every rank calls it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "model/param_layout.h"
#include "parallel/collectives.h"
#include "parallel/model_state.h"
#include "train/run_folder.h"

namespace fsdp {

class Checkpoints {
 public:
  Checkpoints(const CheckpointingConfig& config, RunFolder& folder, Collectives& world, const ParamLayout& layout,
              ModelState& state);

  /** checkpointing.dir, resolved against the run folder. */
  const std::string& dir() const { return dir_; }

  /**
   * The checkpoint a run starts from: for --resume auto the newest complete one that verifies
   * (rank 0 looks; every rank gets the same; unusable ones are logged and passed over), and an
   * error naming each one and why when there are checkpoints but none verifies; for a path that
   * path; for "" or "never" none, the checkpoints already there set aside (previous-TIME/), never
   * deleted. Empty when there is none.
   */
  std::string resume_point(const std::string& resume);
  /** The newest checkpoint that verifies whole, on every rank ("" when none). */
  std::string newest_usable();
  /** The step a checkpoint folder holds (-1 when it is not one of dir()'s). */
  long step_of(const std::string& path) const;

  /** Loads path into the model state; returns the trainer's state saved with it. */
  nlohmann::json load(const std::string& path);
  /** Saves `step` with the trainer's state, prunes, writes the `checkpoint` event. */
  void save(long step, const nlohmann::json& trainer_state);

  /** Rank 0's clock says save_every_minutes has passed since the last save (to be agreed on by a vote). */
  bool clock_due() const;
  /** Whether the step just completed is due by save_every_n_steps. */
  bool steps_due(long step) const;
  /** Whether the run's end saves (checkpointing on, and this step not saved yet). */
  bool final_due(long step) const;
  /** Whether a run about to start must save step 0 first (stability.on_nan rollback with nothing to roll back to);
   * agreed. */
  bool first_due(bool rollback, long step);
  /** The clock restarts (the run starts). */
  void restart_clock();

 private:
  std::string newest_usable_or_why(std::string* error);
  void set_aside_previous();

  const CheckpointingConfig& config_;
  RunFolder& folder_;
  Collectives& world_;
  const ParamLayout& layout_;
  ModelState& state_;
  std::string dir_;
  double last_save_time_ = 0;
  long last_saved_step_ = -1;
};

}  // namespace fsdp
