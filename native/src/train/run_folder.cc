#include "train/run_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "runtime/files.h"

namespace fsdp {

const char* status_name(RunStatus s) {
  return s == RunStatus::completed ? "completed" : s == RunStatus::failed ? "failed" : "stopped";
}

std::string run_attempt_from_env() {
  const char* v = std::getenv(kRunAttemptEnv);
  return v ? v : "";
}

namespace {

bool is_attempt_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

/** A folder of the run folder, made when missing; never a link (it would carry the events out of the folder). */
void make_own_folder(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directory(path, ec);
  const auto st = std::filesystem::symlink_status(path, ec);
  if (ec || st.type() != std::filesystem::file_type::directory)
    throw std::runtime_error(path.string() +
                             " is not a folder of the run folder (a link, a file, or it cannot be made" +
                             (ec ? ": " + ec.message() : std::string()) + "): the runtime's events are not written");
}

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

std::string event_log_path(const std::string& dir, const std::string& attempt) {
  const std::filesystem::path folder(dir);
  const char* owner = std::getenv(kRunOwnerMergesEnv);
  std::error_code ec;
  // An owner of another folder (a run_dir of the runtime's own, not its owner's) merges nothing of this one.
  if (!owner || !*owner || attempt.empty() || !std::filesystem::equivalent(owner, folder, ec) || ec)
    return (folder / "metrics.jsonl").string();
  if (!is_attempt_id(attempt))
    throw std::runtime_error(std::string(kRunAttemptEnv) + " \"" + attempt +
                             "\" is not an attempt id (1 to 64 letters, digits, '-' or '_'): the runtime's events file "
                             "under " +
                             (folder / "events").string() + " would not stay inside the run folder");
  make_own_folder(folder / "events");
  make_own_folder(folder / "events" / attempt);
  return (folder / "events" / attempt / "runtime.jsonl").string();
}

RunFolder::RunFolder(const std::string& dir, const RunConfig& config, bool writer, bool echo)
    : dir_(dir), attempt_(run_attempt_from_env()), writer_(writer) {
  if (!writer_) {
    log_ = std::make_unique<MetricsLog>("", false);
    return;
  }
  std::filesystem::create_directories(dir_);
  // Before anything is written: a second trainer on this folder stops here (run_folder_lock.h).
  lock_ = std::make_unique<RunFolderLock>(dir_);
  const std::string metrics = (std::filesystem::path(dir_) / "metrics.jsonl").string();
  const std::string events = event_log_path(dir_, attempt_);
  // Errors name the file the person knows: a full disk reads "…runtime.jsonl, the runtime's part of …/metrics.jsonl".
  log_ = std::make_unique<MetricsLog>(events, echo,
                                      events == metrics ? metrics : events + ", the runtime's part of " + metrics);
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
  if (!attempt_.empty()) e["attempt"] = attempt_;
  std::lock_guard<std::mutex> lock(mu_);
  // One end per attempt: a watchdog's thread (train/job_watch.h, the collective watchdog) and the
  // main thread may both reach an end as the job ends; the first is the run's, a later one is dropped.
  if (ended_) return;
  ended_ = true;
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
  return last_step_in_log((std::filesystem::path(dir_) / "metrics.jsonl").string());
}

long last_step_in_log(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return 0;
  // As every reader of a run folder reads (core/protocol/regular-file.ts), and not through a link,
  // as its writer opens it: a FIFO would block here deaf to SIGTERM, /dev/zero or /dev/urandom never
  // end. A refusal throws, naming the file and what it is.
  const ReadOnlyFile in(path, /*follow_links=*/false);
  // From the end backwards, a chunk at a time: the last step event is near the end, and a file of
  // any size costs a chunk of memory. A line longer than a chunk is no step event: passed over.
  constexpr std::size_t kChunk = 1 << 20;
  std::uint64_t end = in.size();
  std::string tail;           // the end of a line that began before `end`, read with the chunk after it
  bool in_long_line = false;  // the bytes just after `end` belong to a line longer than a chunk
  while (end > 0) {
    const std::uint64_t begin = end > kChunk ? end - kChunk : 0;
    std::string text(static_cast<std::size_t>(end - begin), '\0');
    text.resize(in.read_some(begin, text.data(), text.size()));
    if (in_long_line) {
      const std::size_t nl = text.rfind('\n');
      end = begin;
      if (nl == std::string::npos) continue;  // still inside it
      text.resize(nl + 1);
      in_long_line = false;
    } else {
      text += tail;
    }
    tail.clear();
    std::size_t from = 0;
    if (begin > 0) {  // the first line may have begun in the chunk before: kept for it
      const std::size_t nl = text.find('\n');
      from = nl == std::string::npos ? text.size() : nl + 1;
      if (from > kChunk)
        in_long_line = true;
      else
        tail = text.substr(0, from);
    }
    for (std::size_t stop = text.size(); stop > from;) {
      const std::size_t nl = text.rfind('\n', stop - 1);
      const std::size_t start = nl == std::string::npos || nl < from ? from : nl + 1;
      const std::string_view line(text.data() + start, stop - start);
      stop = start > from ? start - 1 : from;
      // Only step events count; a line cut short or not JSON is passed over, as the readers do.
      if (line.find("\"step\"") == std::string_view::npos) continue;
      const nlohmann::json e = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
      if (e.is_object() && e.value("type", "") == "step" && e.contains("step") && e["step"].is_number_integer())
        return e["step"].get<long>();
    }
    end = begin;
  }
  return 0;
}

}  // namespace fsdp
