#include "train/checkpoints.h"

#include <chrono>
#include <cstdint>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "parallel/agreement.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

Checkpoints::Checkpoints(const CheckpointingConfig& config, RunFolder& folder, Collectives& world, const ParamLayout& layout, ModelState& state)
    : config_(config), folder_(folder), world_(world), layout_(layout), state_(state) {
  const fs::path d(config_.dir);
  dir_ = d.is_absolute() ? d.string() : (fs::path(folder_.dir()) / d).string();
}

std::string Checkpoints::resume_point(const std::string& resume) {
  const std::string path = resume == "auto" ? newest_usable() : resume;
  if (path.empty() && resume == "auto") folder_.log("info", "--resume auto: no complete checkpoint in " + dir_ + "; starting from step 0");
  return path;
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

nlohmann::json Checkpoints::load(const std::string& path) { return load_checkpoint(path, layout_, state_); }

void Checkpoints::save(long step, const nlohmann::json& trainer_state) {
  const auto t0 = std::chrono::steady_clock::now();
  const SavedCheckpoint c = save_checkpoint(dir_, step, trainer_state, layout_, state_);
  last_save_time_ = unix_time();
  last_saved_step_ = step;
  if (world_.rank() != 0) return;
  prune_checkpoints(dir_, config_.keep_last_n);
  folder_.write({{"type", "checkpoint"}, {"step", step}, {"path", fs::relative(c.path, folder_.dir()).string()}, {"bytes", c.bytes}, {"save_ms", 1000.0 * seconds_since(t0)}});
}

bool Checkpoints::clock_due() const {
  return world_.rank() == 0 && config_.save_every_minutes > 0 && unix_time() - last_save_time_ >= 60.0 * config_.save_every_minutes;
}

bool Checkpoints::steps_due(long step) const { return config_.save_every_n_steps > 0 && step % config_.save_every_n_steps == 0; }

bool Checkpoints::final_due(long step) const {
  const bool checkpointing = config_.save_final || config_.save_every_n_steps > 0 || config_.save_every_minutes > 0;
  return checkpointing && last_saved_step_ != step;
}

bool Checkpoints::first_due(bool rollback, long step) {
  std::uint8_t first = world_.rank() == 0 && rollback && step == 0 && list_checkpoints(dir_).empty();
  world_.broadcast(&first, 1, 0);
  return first != 0;
}

void Checkpoints::restart_clock() { last_save_time_ = unix_time(); }

}  // namespace fsdp
