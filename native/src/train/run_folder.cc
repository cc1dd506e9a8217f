#include "train/run_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "runtime/files.h"

namespace fsdp {

const char* status_name(RunStatus s) {
  return s == RunStatus::completed ? "completed" : s == RunStatus::failed ? "failed" : "stopped";
}

RunFolder::RunFolder(const std::string& dir, const RunConfig& config, bool writer, bool echo)
    : dir_(dir), writer_(writer) {
  if (!writer_) {
    log_ = std::make_unique<MetricsLog>("", false);
    return;
  }
  std::filesystem::create_directories(dir_);
  // Before anything is written: a second trainer on this folder stops here (run_folder_lock.h).
  lock_ = std::make_unique<RunFolderLock>(dir_);
  log_ = std::make_unique<MetricsLog>((std::filesystem::path(dir_) / "metrics.jsonl").string(), echo);
  manifest_ = std::make_unique<RunManifest>(dir_, config.resolved, config.world_size());
  if (config.logging.tensorboard) tensorboard_ = std::make_unique<TensorBoardWriter>(dir_);
  last_progress_ = unix_time();
}

std::string RunFolder::run_id() const {
  return manifest_ ? manifest_->run_id() : "";
}

void RunFolder::write(const nlohmann::json& event) {
  log_->write(event);
  if (!tensorboard_) return;
  try {
    tensorboard_->write_event(event, unix_time());
  } catch (const std::exception& e) {
    // The event files are a copy for other tools: losing them must not end the run.
    const std::string why = e.what();
    tensorboard_.reset();
    log_->log("warn", "TensorBoard event files stop here: " + why);
  }
}

void RunFolder::log(const std::string& level, const std::string& msg) {
  log_->log(level, msg);
}

void RunFolder::update(const nlohmann::json& fields) {
  if (!manifest_) return;
  std::lock_guard<std::mutex> lock(mu_);
  manifest_->update(fields);
  last_progress_ = unix_time();
}

void RunFolder::progress(long step) {
  if (!manifest_ || unix_time() - last_progress_ < 1.0) return;
  update({{"step", step}});
}

void RunFolder::add_pids(const std::vector<int>& pids) {
  if (!manifest_) return;
  std::lock_guard<std::mutex> lock(mu_);
  manifest_->add_pids(pids);
}

void RunFolder::end(RunStatus status, long step, const std::string& reason) {
  nlohmann::json e = {{"type", "run_end"}, {"status", status_name(status)}, {"step", step}};
  nlohmann::json fields = {{"status", status_name(status)}, {"step", step}};
  if (!reason.empty()) e["reason"] = reason, fields["end_reason"] = reason;
  std::lock_guard<std::mutex> lock(mu_);
  // run.json says how the run ended even when metrics.jsonl cannot take the event (a full disk).
  std::string lost;
  try {
    log_->write(e);
  } catch (const std::exception& x) {
    lost = x.what();
  }
  if (manifest_) {
    try {
      manifest_->update(fields);
    } catch (const std::exception& x) {
      std::fprintf(stderr, "fsdp-train-native: the run's end could not be written to run.json: %s\n", x.what());
    }
  }
  if (!lost.empty())
    std::fprintf(stderr, "fsdp-train-native: the run_end event could not be written: %s\n", lost.c_str());
}

long RunFolder::last_logged_step() const {
  std::ifstream in(std::filesystem::path(dir_) / "metrics.jsonl");
  long last = 0;
  std::string line;
  while (std::getline(in, line)) {
    // Only step events count; a line cut short or not JSON is passed over, as the readers do.
    if (line.find("\"step\"") == std::string::npos) continue;
    const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_object() && e.value("type", "") == "step" && e.contains("step") && e["step"].is_number_integer())
      last = std::max(last, e["step"].get<long>());
  }
  return last;
}

}  // namespace fsdp
