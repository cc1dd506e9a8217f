#include "train/checkpoints.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "parallel/agreement.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

Checkpoints::Checkpoints(const CheckpointingConfig& config, RunFolder& folder, Collectives& world,
                         const ParamLayout& layout, ModelState& state)
    : config_(config), folder_(folder), world_(world), layout_(layout), state_(state) {
  const fs::path d(config_.dir);
  dir_ = d.is_absolute() ? d.string() : (fs::path(folder_.dir()) / d).string();
}

std::string Checkpoints::resume_point(const std::string& resume) {
  if (resume != "auto" && resume != "never" && !resume.empty()) return resume;
  // Rank 0 looks, so that every rank starts from the same place (or fails the same way).
  std::string path, error;
  if (world_.rank() == 0) {
    try {
      if (resume == "auto")
        path = newest_usable_or_why(&error);
      else
        set_aside_previous();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = broadcast_string(world_, error, 0);
  if (!error.empty()) throw std::runtime_error(error);
  path = broadcast_string(world_, path, 0);
  if (path.empty() && resume == "auto")
    folder_.log("info", "--resume auto: no complete checkpoint in " + dir_ + "; starting from step 0");
  return path;
}

namespace {

/**
 * Why dir holds no checkpoint to continue from, in a few words: it is missing, it holds only
 * writes that never finished, its step-* entries are links rather than the run's own folders, or
 * nothing at all.
 */
std::string why_nothing_resumable(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return "the folder " + dir + " does not exist (deleted?)";
  if (!fs::is_directory(dir, ec)) return dir + " is not a folder";
  std::vector<std::string> unfinished, links, other;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".old-", 0) == 0)
      unfinished.push_back(name);
    else if (e.is_symlink(ec))
      links.push_back(name);
    else if (name.rfind("previous-", 0) != 0)
      other.push_back(name);
  }
  auto list = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < 5; ++i) out += (out.empty() ? "" : ", ") + names[i];
    return names.size() > 5 ? out + " and " + std::to_string(names.size() - 5) + " more" : out;
  };
  std::vector<std::string> parts;
  if (!unfinished.empty())
    parts.push_back("only writes that never finished (" + list(unfinished) + "), which are never loaded");
  if (!links.empty()) parts.push_back("symbolic links (" + list(links) + "), not checkpoint folders of this run");
  if (!other.empty()) parts.push_back("no checkpoint among " + list(other));
  if (parts.empty()) return dir + " is empty";
  std::string out = dir + " holds ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

}  // namespace

std::string Checkpoints::newest_usable_or_why(std::string* error) {
  std::string why;
  const auto all = list_checkpoints(dir_);
  if (all.empty()) {
    // Starting from step 0 would replace the steps the run has logged: with nothing to continue
    // from, a run that has logged steps is refused, and told how to start over.
    const long logged = folder_.last_logged_step();
    if (logged > 0) {
      *error = "--resume auto: the run logged steps up to " + std::to_string(logged) + " (" +
               (fs::path(folder_.dir()) / "metrics.jsonl").string() +
               ") but there is no checkpoint to continue from: " + why_nothing_resumable(dir_) +
               ".\nNothing was started and nothing deleted. To start over from step 0, replacing those steps, run with "
               "--resume never";
      return "";
    }
  }
  // Leftovers of writes that never finished hold disk space and are never loaded: gone first.
  remove_unfinished_writes(dir_);
  for (const auto& [step, dir] : all) {
    const std::string problem = verify_checkpoint(dir);
    if (problem.empty()) return dir;
    folder_.log("warn", "checkpoint " + dir + " is unusable and was not loaded: " + problem);
    why += "\n  " + dir + ": " + problem;
  }
  // Starting from step 0 here would overwrite them and append a second history to metrics.jsonl.
  if (!all.empty()) {
    *error = "--resume auto: none of the " + std::to_string(all.size()) + " checkpoints in " + dir_ +
             " can be loaded:" + why +
             "\nNothing was started and nothing deleted. To start over from step 0 instead, run with --resume never "
             "(they are set aside, not deleted)";
  }
  return "";
}

void Checkpoints::set_aside_previous() {
  remove_unfinished_writes(dir_);
  const auto all = list_checkpoints(dir_);
  if (all.empty()) return;
  // A run that starts over would overwrite and prune them: they move, whole, out of its way.
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  const fs::path aside = fs::path(dir_) / ("previous-" + std::string(stamp));
  fs::create_directories(aside);
  for (const auto& [step, dir] : all) fs::rename(dir, aside / fs::path(dir).filename());
  folder_.log("info", "starting from step 0: the " + std::to_string(all.size()) + " checkpoints already in " + dir_ +
                          " are set aside in " + aside.string());
}

std::string Checkpoints::newest_usable() {
  // Rank 0 looks, so that every rank loads the same one.
  std::string path;
  if (world_.rank() == 0) {
    for (const auto& [step, dir] : list_checkpoints(dir_)) {
      const std::string problem = verify_checkpoint(dir);
      if (problem.empty()) {
        path = dir;
        break;
      }
      folder_.log("warn", "checkpoint " + dir + " is unusable and was not loaded: " + problem);
    }
  }
  return broadcast_string(world_, path, 0);
}

long Checkpoints::step_of(const std::string& path) const {
  for (const auto& [s, dir] : list_checkpoints(dir_))
    if (dir == path) return s;
  return -1;
}

nlohmann::json Checkpoints::load(const std::string& path) {
  return load_checkpoint(path, layout_, state_);
}

void Checkpoints::save(long step, const nlohmann::json& trainer_state) {
  const auto t0 = std::chrono::steady_clock::now();
  const SavedCheckpoint c = save_checkpoint(dir_, step, trainer_state, layout_, state_);
  last_save_time_ = unix_time();
  last_saved_step_ = step;
  if (world_.rank() != 0) return;
  prune_checkpoints(dir_, config_.keep_last_n);
  folder_.write({{"type", "checkpoint"},
                 {"step", step},
                 {"path", fs::relative(c.path, folder_.dir()).string()},
                 {"bytes", c.bytes},
                 {"save_ms", 1000.0 * seconds_since(t0)}});
}

bool Checkpoints::clock_due() const {
  return world_.rank() == 0 && config_.save_every_minutes > 0 &&
         unix_time() - last_save_time_ >= 60.0 * config_.save_every_minutes;
}

bool Checkpoints::steps_due(long step) const {
  return config_.save_every_n_steps > 0 && step % config_.save_every_n_steps == 0;
}

bool Checkpoints::final_due(long step) const {
  const bool checkpointing = config_.save_final || config_.save_every_n_steps > 0 || config_.save_every_minutes > 0;
  return checkpointing && last_saved_step_ != step;
}

bool Checkpoints::first_due(bool rollback, long step) {
  std::uint8_t first = world_.rank() == 0 && rollback && step == 0 && list_checkpoints(dir_).empty();
  world_.broadcast(&first, 1, 0);
  return first != 0;
}

void Checkpoints::restart_clock() {
  last_save_time_ = unix_time();
}

}  // namespace fsdp
