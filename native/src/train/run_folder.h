// The run folder as the runtime writes it (runs/<run-id>/): the event log (metrics.jsonl, or under the
// run's owner events/<attempt>/runtime.jsonl, which the owner merges into it) and the same
// scalars as TensorBoard event files (logging.tensorboard), under the folder's lock. Rank 0 alone writes them; on the
// other ranks a RunFolder writes nothing, so the loop calls it the same way everywhere. run.json is not the runtime's:
// the supervisor that owns the run (python/fsdp_studio/supervise.py) keeps it from these events (native/FORMATS.md,
// "The run folder and its owner"); the runtime only reads the run's id from it.
//
// Thread safety: the job watch (train/job_watch.h) may end the run from its own thread while the
// main thread writes; end() takes one lock, and every event is one write() call.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "metrics/metrics_log.h"
#include "metrics/tensorboard_writer.h"
#include "run_folder/run_folder_lock.h"

namespace fsdp {

enum class RunStatus { completed, failed, stopped };
const char* status_name(RunStatus s);

/** Where the run's owner (python/fsdp_studio/supervise.py) names the attempt it started the runtime for. */
inline constexpr const char* kRunAttemptEnv = "FSDP_RUN_ATTEMPT";
/** This process's attempt: kRunAttemptEnv's value, empty when it is unset. */
std::string run_attempt_from_env();
/**
 * Set by the run's owner to the run folder whose metrics.jsonl it alone writes: each writer of the
 * run appends to a file of its own, events/<attempt>/, which the owner merges into metrics.jsonl
 * in the order it reads them (native/FORMATS.md, "The run folder and its owner").
 */
inline constexpr const char* kRunOwnerMergesEnv = "FSDP_RUN_OWNER_MERGES";

/**
 * Where rank 0 appends its events: <dir>/events/<attempt>/runtime.jsonl when the run's owner merges
 * this folder's events (kRunOwnerMergesEnv names it, and an attempt is named), else <dir>/metrics.jsonl
 * (started by hand, the runtime is that file's only writer). Throws when the attempt's id is not one
 * (1 to 64 letters, digits, '-' or '_'): a path built from it must stay inside the run folder.
 */
std::string event_log_path(const std::string& dir, const std::string& attempt);

class RunFolder {
 public:
  /** writer: this rank writes the folder (rank 0); echo: events also go to standard output. */
  RunFolder(const std::string& dir, const RunConfig& config, bool writer, bool echo);
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::string& dir() const { return dir_; }
  bool writer() const { return writer_; }
  /** The run's id: run.json's, else the folder's name (empty on the ranks that do not write the folder). */
  const std::string& run_id() const { return run_id_; }
  /**
   * The attempt at the run this process is part of, as its owner named it (kRunAttemptEnv; empty when
   * the runtime was started without one): run_start and run_end carry it, so a reader tells whose start
   * or end a line is by the stream itself (native/FORMATS.md, "The run folder and its owner").
   */
  const std::string& attempt() const { return attempt_; }

  /** An event of the metrics protocol (core/schemas/metrics-event.schema.json). */
  void write(const nlohmann::json& event);
  /** A `log` event. */
  void log(const std::string& level, const std::string& msg);

  /** The run's end: the run_end event, by any thread; only the first call's is written (one end per attempt). */
  void end(RunStatus status, long step, const std::string& reason);

  /** The step of metrics.jsonl's last `step` event (0 when none): how far the run has logged. */
  long last_logged_step() const;

 private:
  std::string dir_, run_id_, attempt_;
  bool writer_;
  std::mutex mu_;
  bool ended_ = false;                   // under mu_: the run's end was written (or tried)
  std::unique_ptr<RunFolderLock> lock_;  // writer only: held for the run's life
  std::unique_ptr<MetricsLog> log_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;  // writer only, unless logging.tensorboard is false
};

/**
 * The step of the last `step` event of the event log at `path`, 0 when it has none or does not
 * exist. Reads at most a chunk at a time from the end; throws, naming the file and what it is, when
 * it is not a regular file (a link, a FIFO, a device).
 */
long last_step_in_log(const std::string& path);

}  // namespace fsdp
