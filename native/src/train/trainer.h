// The training loop: builds the runtime's pieces from the config, then steps the optimizer
// max_steps times — micro-batches with gradient accumulation, global-norm clipping, float16 loss
// scaling, NaN/Inf and spike handling (anomalies.cc), evaluation. What is not the loop has a home
// of its own: the run folder's files (run_folder.h), the step events (step_events.h), checkpoint
// cadence, resume and pruning (checkpoints.h), the stop/save vote (step_end_vote.h), the job's
// supervision (job_watch.h), debug NaN planting (nan_planting.h).
//
// Every rank of a multi-process job runs one Trainer: the parallelism layer (ModelState,
// parallel/strategy.h) is where sharding plugs in, each rank reads its part of every global batch,
// and every decision that ends or branches the run is agreed between the ranks (one rank deciding
// alone would leave the others waiting in a collective).
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "data/batch_stream.h"
#include "diagnostics/step_inspector.h"
#include "memory/memory_plan.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "parallel/device_collectives.h"
#include "parallel/model_state.h"
#include "parallel/single_process.h"
#include "parallel/watched_collectives.h"
#include "train/checkpoints.h"
#include "parallel/collective_watchdog.h"
#include "train/job_watch.h"
#include "train/loss_scaler.h"
#include "train/nan_planting.h"
#include "train/run_folder.h"
#include "train/step_events.h"
#include "train/trainer_state.h"

namespace fsdp {

struct TrainerOptions {
  std::string run_dir;
  std::string resume;                      // "", "auto", or a checkpoint folder
  double peak_flops = 0;                   // FLOP/s for MFU; 0 measures sgemm at start
  bool echo_metrics = true;                // also write events to standard output (rank 0)
  const std::atomic<int>* stop = nullptr;  // set (to the signal number) to stop after the current step
  Collectives* world = nullptr;            // the job's ranks (started by mpirun or srun); null: one process
  int launcher_pid = 0;  // the process that started the job (fsdp-train, mpirun), watched by rank 0; 0: none
  std::string launcher_name = "its launcher";  // how a refusal names it (FSDP_LAUNCHER_NAME)
};

struct RunResult {
  RunStatus status = RunStatus::completed;
  long step = 0;
  std::string reason;
  // The failure may have reached this rank alone (a write of rank 0's, a fault in one rank's step):
  // the other ranks wait for it in a collective, so this rank ends the whole job (cli/main.cc).
  bool alone = false;
};

class Trainer {
 public:
  Trainer(const RunConfig& config, TrainerOptions options);
  ~Trainer();
  RunResult run();

 private:
  struct StepOutcome;
  std::string set_up();
  void start(const std::string& resumed_from);
  void load(const std::string& path);
  void initialise_parameters();
  StepOutcome train_step(long step);
  double run_micro_batches(long step, std::uint64_t first_position, StepProbe* probe,
                           std::vector<std::vector<std::int32_t>>* tokens);
  double mean_over_ranks(double local);
  /** What a step measured, for the events about it. */
  struct StepNumbers {
    double loss, lr, grad_norm;
    std::chrono::steady_clock::time_point started;
  };
  std::optional<RunResult> handle_nonfinite(long step, const StepNumbers& n, std::uint64_t first_position,
                                            const Planting* planted);
  std::optional<RunResult> handle_bad_update(long step, const StepNumbers& n, const NonfiniteUpdate& bad);
  std::optional<RunResult> apply_nan_policy(long step, const StepNumbers& n, const nlohmann::json& where,
                                            const std::string& kind, const std::string& dump);
  void write_run_start(const std::string& resumed_from);
  void write_step(long step, double loss, double lr, double grad_norm, double seconds, bool skipped);
  void evaluate(long step);
  void save(long step);
  /** together: every rank ends here (agreed), so they wait for each other before leaving. */
  void finish(const RunResult& r, bool together = true);
  RunResult run_steps(const std::string& resumed_from);
  bool rank0() const { return world_->rank() == 0; }

  RunConfig config_;
  TrainerOptions options_;
  SingleProcess alone_;
  Collectives* world_;     // control: every rank, host values (votes, agreement, losses, norms)
  CollectiveClock clock_;  // where this rank is in its collectives, for the watchdog
  std::unique_ptr<WatchedCollectives> watched_world_;  // world_ when the job has several ranks
  std::unique_ptr<Backend> backend_;
  DeviceCollectives
      device_world_;  // what the model state's buffers go through (NCCL, MPI through pinned memory, or world_)
  std::unique_ptr<WatchedCollectives> watched_device_;  // device_world_.world when it is not world_
  ParamLayout layout_;
  MemoryPlan plan_;
  std::unique_ptr<RunFolder> folder_;
  std::unique_ptr<StepEvents> events_;
  std::unique_ptr<NanPlanting> planting_;
  std::unique_ptr<ModelState> state_;
  std::unique_ptr<Checkpoints> checkpoints_;
  std::unique_ptr<JobWatch> watch_;               // rank 0
  std::unique_ptr<CollectiveWatchdog> watchdog_;  // every rank of a job of several
  std::atomic<long> completed_step_{0};           // for the run_end the watchdog may write
  std::unique_ptr<Model> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::shared_ptr<const TokenFile> train_file_, val_file_;
  std::unique_ptr<BatchStream> stream_;
  TrainerState st_;
  LossScaler scaler_{false};  // float16 compute only
};

}  // namespace fsdp
