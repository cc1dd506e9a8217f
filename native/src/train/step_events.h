// The run's events about its steps, as the metrics protocol has them
// (core/schemas/metrics-event.schema.json): run_start with every rank's host, pid and resident
// memory; a step event per logged step with the loss, the rate, throughput, MFU and the peak
// memory per category — the run's (highest peak of any rank) and one per rank; eval events.
// Every rank calls these (they gather across ranks); rank 0's RunFolder writes them.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "config/run_config.h"
#include "memory/memory_plan.h"
#include "parallel/collectives.h"
#include "backend/peak_flops.h"
#include "train/job_watch.h"
#include "train/run_folder.h"

namespace fsdp {

/** What a step measured, for its event. */
struct StepRecord {
  long step = 0;
  double loss = 0, lr = 0, grad_norm = 0;
  double seconds = 0;                // wall clock
  bool skipped = false;              // the update was not applied
  std::optional<double> loss_scale;  // float16 runs
};

class StepEvents {
 public:
  StepEvents(RunFolder& folder, Collectives& world, Backend& backend, const RunConfig& config, const MemoryPlan& plan,
             double flops_per_token);

  /** The peak MFU is measured against (0: none; backend/peak_flops.h), rank 0's, for run_start and the steps. */
  void set_peak(PeakFlops peak) { peak_ = std::move(peak); }
  double peak_flops() const { return peak_.flops; }

  /** run_start: the config, the world (ranks from gather_job), the plan, where the run starts, what the device
   * collectives are. */
  void run_start(const std::vector<JobRank>& ranks, long start_step, std::uint64_t n_params,
                 const std::string& resumed_from, const std::string& collectives);
  /** A step begins: peaks are measured from here, and the process's CPU time. */
  void step_begins();
  /** The step's events, when logging.every_n_steps (or a skip, or the last step) asks for them. */
  void step(const StepRecord& s);
  void eval(long step, double val_loss);

 private:
  nlohmann::json step_event(const StepRecord& s, const MemoryUsage& device, const MemoryUsage& host, double seconds,
                            double cpu_seconds, double resident, int ranks,
                            const std::optional<nlohmann::json>& gpu) const;

  RunFolder& folder_;
  Collectives& world_;
  Backend& backend_;
  const RunConfig& config_;
  const MemoryPlan& plan_;
  /** A step went faster than the peak: the peak becomes that speed (and the cache's, when it came from there), said in
   * a log event. */
  void raise_peak(double flops, long step);

  double flops_per_token_ = 0;
  PeakFlops peak_;
  long peak_raised_at_ = -1;  // the step that last raised the peak
  double step_cpu_start_ = 0;
};

/** {category: bytes, …, total}. */
nlohmann::json by_category(const MemoryUsage& m);

}  // namespace fsdp
