// debug.inject_nan as the loop applies it: which step plants a NaN where (forward, backward, or an
// optimizer update), and which steps already did. Planted steps are kept in the run folder
// (diagnostics/injected.json), not in checkpoints, so a resumed or rolled-back run does not plant
// again when inject_nan.once is set.
#pragma once
#include <optional>
#include <set>
#include <string>

#include "config/run_config.h"
#include "diagnostics/step_inspector.h"
#include "model/param_layout.h"
#include "optim/adamw.h"

namespace fsdp {

class NanPlanting {
 public:
  /** Reads the steps already planted from run_dir; writer: this rank records new ones (rank 0). */
  NanPlanting(const InjectNanConfig& config, const std::string& run_dir, bool writer,
              Architecture arch = Architecture::gpt2);

  /** Where to plant in this step's forward or backward, if anywhere. */
  std::optional<Planting> activations(long step) const;
  /** Which update to poison in this step's optimizer phase, if any. */
  std::optional<UpdatePoison> update(long step, const ParamLayout& layout) const;
  /** The step planted its NaN. */
  void planted(long step);

 private:
  bool due(long step) const;

  const InjectNanConfig& config_;
  std::string run_dir_;
  bool writer_;
  Architecture arch_;  // which block op a backward planting names by default
  std::set<long> planted_;
};

}  // namespace fsdp
