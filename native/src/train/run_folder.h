// The run folder as a run writes it (runs/<run-id>/): the event log metrics.jsonl and run.json,
// the run's status, and the same scalars as TensorBoard event files (logging.tensorboard). Rank 0 alone writes them; on
// the other ranks a RunFolder writes nothing, so the loop calls it the same way everywhere. The place for what guards
// the folder as a whole (who may write it, what happens when the disk is full).
//
// Thread safety: the job watch (train/job_watch.h) may end the run from its own thread while the
// main thread writes; end() and update() take one lock, and every event is one write() call.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "metrics/metrics_log.h"
#include "metrics/run_manifest.h"
#include "metrics/tensorboard_writer.h"
#include "run_folder/run_folder_lock.h"

namespace fsdp {

enum class RunStatus { completed, failed, stopped };
const char* status_name(RunStatus s);

class RunFolder {
 public:
  /** writer: this rank writes the folder (rank 0); echo: events also go to standard output. */
  RunFolder(const std::string& dir, const RunConfig& config, bool writer, bool echo);
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::string& dir() const { return dir_; }
  bool writer() const { return writer_; }
  /** run.json's run id (empty on the ranks that do not write the folder). */
  std::string run_id() const;

  /** An event of the metrics protocol (core/schemas/metrics-event.schema.json). */
  void write(const nlohmann::json& event);
  /** A `log` event. */
  void log(const std::string& level, const std::string& msg);

  /** Merges fields into run.json and writes it. */
  void update(const nlohmann::json& fields);
  /** run.json's step, at most once a second (what the editor shows while the run goes on). */
  void progress(long step);
  /** Process ids of the job's ranks on this host, written to run.json with the next update. */
  void add_pids(const std::vector<int>& pids);

  /** The run's end: the run_end event, then run.json's status. Called once, by any thread. */
  void end(RunStatus status, long step, const std::string& reason);

  /** The highest step a `step` event of metrics.jsonl names (0 when none): what the run has logged so far. */
  long last_logged_step() const;

 private:
  std::string dir_;
  bool writer_;
  std::mutex mu_;
  std::unique_ptr<RunFolderLock> lock_;  // writer only: held for the run's life
  std::unique_ptr<MetricsLog> log_;
  std::unique_ptr<RunManifest> manifest_;           // writer only
  std::unique_ptr<TensorBoardWriter> tensorboard_;  // writer only, unless logging.tensorboard is false
  double last_progress_ = 0;
};

}  // namespace fsdp
