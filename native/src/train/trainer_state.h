// What a checkpoint stores of the trainer besides the model and optimizer: the step, the AdamW
// update count, the data stream's position, the rollback adjustments and the spike windows.
// Everything a resumed run needs to continue bitwise as the uninterrupted one would.
#pragma once
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "diagnostics/spike_detector.h"

namespace fsdp {

struct TrainerState {
  long step = 0;                         // optimizer steps completed (applied or skipped)
  long adam_t = 0;                       // updates applied: AdamW's bias-correction count
  std::uint64_t data_position = 0;       // global micro-batches consumed from the training stream
  std::uint64_t global_micro_batch = 0;  // sequences in one (ranks x batch_size_per_gpu); 0: not recorded
  double lr_factor = 1.0;                // product of rollback_lr_factor over the rollbacks so far
  int rollbacks = 0;
  std::set<long> skip_batches_at;  // steps whose batches a rollback skips
  SpikeDetector loss_spikes, grad_norm_spikes;

  TrainerState(double zscore, int window) : loss_spikes(zscore, window), grad_norm_spikes(zscore, window) {}

  nlohmann::json to_json() const {
    return {{"step", step},
            {"adam_t", adam_t},
            {"data_position", data_position},
            {"global_micro_batch", global_micro_batch},
            {"lr_factor", lr_factor},
            {"rollbacks", rollbacks},
            {"skip_batches_at", skip_batches_at},
            {"loss_window", loss_spikes.to_json()},
            {"grad_norm_window", grad_norm_spikes.to_json()}};
  }
  /** Reads a checkpoint's state; throws std::runtime_error naming the field that is missing, of the wrong type or out
   * of range. */
  void from_json(const nlohmann::json& j) {
    step = whole(j, "step", 0, 1'000'000'000'000);
    adam_t = whole(j, "adam_t", 0, step);  // updates applied: at most one per step
    data_position = static_cast<std::uint64_t>(whole(j, "data_position", 0, std::numeric_limits<long long>::max()));
    global_micro_batch = j.contains("global_micro_batch")
                             ? static_cast<std::uint64_t>(whole(j, "global_micro_batch", 0, 1LL << 40))
                             : 0;  // absent before several ranks could train
    if (!j.contains("lr_factor") || !j["lr_factor"].is_number())
      throw std::runtime_error("lr_factor is missing or not a number");
    lr_factor = j["lr_factor"].get<double>();
    if (!(lr_factor > 0 && lr_factor <= 1))
      throw std::runtime_error("lr_factor is " + j["lr_factor"].dump() + ", outside (0, 1]");
    rollbacks = static_cast<int>(whole(j, "rollbacks", 0, 1'000'000));
    if (!j.contains("skip_batches_at") || !j["skip_batches_at"].is_array())
      throw std::runtime_error("skip_batches_at is missing or not a list");
    skip_batches_at.clear();
    for (const auto& s : j["skip_batches_at"]) {
      if (!s.is_number_integer() || s.get<long long>() < 1)
        throw std::runtime_error("skip_batches_at holds " + s.dump() + ", not a step");
      skip_batches_at.insert(s.get<long>());
    }
    try {
      loss_spikes.from_json(j.at("loss_window"));
      grad_norm_spikes.from_json(j.at("grad_norm_window"));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(std::string("the spike windows: ") + e.what());
    }
  }

 private:
  static long whole(const nlohmann::json& j, const char* key, long long lo, long long hi) {
    if (!j.contains(key) || !j[key].is_number_integer())
      throw std::runtime_error(std::string(key) + " is missing or not a whole number");
    const nlohmann::json& v = j[key];
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                               : (v.get<long long>() < lo || v.get<long long>() > hi)) {
      throw std::runtime_error(std::string(key) + " is " + v.dump() + ", outside [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]");
    }
    return static_cast<long>(v.get<long long>());
  }
};

}  // namespace fsdp
