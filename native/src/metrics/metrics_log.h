// The run's event log: one JSON object per line (core/schemas/metrics-event.schema.json), appended
// to runs/<run-id>/metrics.jsonl — or, under the run's owner, to the runtime's own file the owner
// merges into it (train/run_folder.h) — and echoed to standard output. Each line goes out in one write()
// on a file opened for appending, so a reader never sees half a line from this writer; a line an
// earlier writer left unterminated is ended first. Write errors name the file and the errno.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace fsdp {

class MetricsLog {
 public:
  /** path empty: standard output only. label: how write errors name the file (default: path). */
  MetricsLog(const std::string& path, bool echo_to_stdout, const std::string& label = "");
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  /** Adds v and time, and writes the event. Non-finite numbers become null. */
  void write(nlohmann::json event);
  void log(const std::string& level, const std::string& msg);

 private:
  std::string path_, label_;
  int fd_ = -1;
  bool echo_;
};

/** A number for the protocol: null when not finite. */
nlohmann::json finite_or_null(double x);

}  // namespace fsdp
