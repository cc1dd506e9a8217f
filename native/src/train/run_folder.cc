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

namespace {

/** The most a run.json may hold (MANIFEST_MAX_BYTES in core/protocol/regular-file.ts). */
constexpr std::uint64_t kMaxManifestBytes = 32ull * 1024 * 1024;

/**
 * run.json's run_id, read as every reader of a run folder reads it (core/protocol/regular-file.ts):
 * a regular file only, opened without blocking, within the size a manifest may have. The folder's
 * name when there is none (the runtime started directly, without its supervisor) or it says none.
 */
std::string run_id_of(const std::string& dir) {
  const std::string from_folder = std::filesystem::path(dir).filename().string();
  const std::string fallback = from_folder.empty() ? "run" : from_folder;
  const std::filesystem::path path = std::filesystem::path(dir) / "run.json";
  if (!std::filesystem::exists(path)) return fallback;
  try {
    ReadOnlyFile in(path.string());
    if (in.size() > kMaxManifestBytes) return fallback;
    std::string text(in.size(), '\0');
    in.read_at(0, text.data(), text.size());
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_object() && doc.contains("run_id") && doc["run_id"].is_string()) return doc["run_id"].get<std::string>();
  } catch (const std::exception&) {
    // A FIFO or a device named run.json is not read: the folder's name serves.
  }
  return fallback;
}

}  // namespace

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
  run_id_ = run_id_of(dir_);
  if (config.logging.tensorboard) tensorboard_ = std::make_unique<TensorBoardWriter>(dir_);
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

void RunFolder::end(RunStatus status, long step, const std::string& reason) {
  nlohmann::json e = {{"type", "run_end"}, {"status", status_name(status)}, {"step", step}};
  if (!reason.empty()) e["reason"] = reason;
  std::lock_guard<std::mutex> lock(mu_);
  try {
    log_->write(e);
  } catch (const std::exception& x) {
    // A full disk: the event goes to the supervisor on stderr instead, which ends the run in run.json
    // with it (python/fsdp_studio/supervise.py, RUN_END_LINE).
    std::fprintf(stderr, "fsdp-train-native: the run_end event could not be written: %s\n", x.what());
    std::fprintf(stderr, "fsdp-train-native: run_end %s\n", e.dump().c_str());
  }
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
