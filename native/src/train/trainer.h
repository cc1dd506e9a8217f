// The training run: builds the runtime's pieces from the config, then steps the optimizer
// max_steps times — micro-batches with gradient accumulation, global-norm clipping, NaN/Inf and
// spike handling, evaluation, checkpoints — writing the metrics protocol and keeping run.json
// current. One process, one rank; the parallelism layer (ModelState) is where sharding plugs in.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "data/batch_stream.h"
#include "diagnostics/step_inspector.h"
#include "memory/memory_plan.h"
#include "metrics/metrics_log.h"
#include "metrics/run_manifest.h"
#include "model/gpt.h"
#include "optim/adamw.h"
#include "parallel/model_state.h"
#include "train/trainer_state.h"

namespace fsdp {

struct TrainerOptions {
  std::string run_dir;
  std::string resume;             // "", "auto", or a checkpoint folder
  double peak_flops = 0;          // FLOP/s for MFU; 0 measures sgemm at start
  bool echo_metrics = true;       // also write events to standard output
  const std::atomic<int>* stop = nullptr;  // set (to the signal number) to stop after the current step
};

enum class RunStatus { completed, failed, stopped };

struct RunResult {
  RunStatus status = RunStatus::completed;
  long step = 0;
  std::string reason;
};

class Trainer {
 public:
  Trainer(const RunConfig& config, TrainerOptions options);
  ~Trainer();
  RunResult run();

 private:
  struct StepOutcome;
  void start(const std::string& resumed_from);
  std::string resume_point();
  void initialise_parameters();
  StepOutcome train_step(long step);
  double run_micro_batches(long step, std::uint64_t first_position, StepProbe* probe, std::vector<std::vector<std::int32_t>>* tokens);
  /** What a step measured, for the events about it. */
  struct StepNumbers {
    double loss, lr, grad_norm;
    std::chrono::steady_clock::time_point started;
  };
  std::optional<RunResult> handle_nonfinite(long step, const StepNumbers& n, std::uint64_t first_position, const Planting* planted);
  std::optional<RunResult> handle_bad_update(long step, const StepNumbers& n, const NonfiniteUpdate& bad);
  std::optional<RunResult> apply_nan_policy(long step, const StepNumbers& n, const nlohmann::json& where, const std::string& kind, const std::string& dump);
  void write_run_start(const std::string& resumed_from);
  void write_step(long step, double loss, double lr, double grad_norm, double seconds, bool skipped);
  void evaluate(long step);
  void save(long step);
  void finish(const RunResult& r);
  std::optional<Planting> planting_for(long step) const;
  void remember_planted(long step);
  std::string checkpoint_dir() const;

  RunConfig config_;
  TrainerOptions options_;
  std::unique_ptr<Backend> backend_;
  ParamLayout layout_;
  MemoryPlan plan_;
  std::unique_ptr<ModelState> state_;
  std::unique_ptr<Gpt> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::shared_ptr<const TokenFile> train_file_, val_file_;
  std::unique_ptr<BatchStream> stream_;
  std::unique_ptr<MetricsLog> log_;
  std::unique_ptr<RunManifest> manifest_;
  TrainerState st_;
  std::set<long> planted_steps_;
  double peak_flops_ = 0, flops_per_token_ = 0;
  double last_save_time_ = 0, last_manifest_time_ = 0;
  double step_cpu_start_ = 0;  // process CPU seconds when the current step began
  long last_saved_step_ = -1;
};

}  // namespace fsdp
