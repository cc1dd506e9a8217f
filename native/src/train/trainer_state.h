// What a checkpoint stores of the trainer besides the model and optimizer: the step, the AdamW
// update count, the data stream's position, the rollback adjustments and the spike windows.
// Everything a resumed run needs to continue bitwise as the uninterrupted one would.
#pragma once
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "diagnostics/spike_detector.h"

namespace fsdp {

struct TrainerState {
  long step = 0;                    // optimizer steps completed (applied or skipped)
  long adam_t = 0;                  // updates applied: AdamW's bias-correction count
  std::uint64_t data_position = 0;  // global micro-batches consumed from the training stream
  std::uint64_t global_micro_batch = 0;  // sequences in one (ranks x batch_size_per_gpu); 0: not recorded
  double lr_factor = 1.0;           // product of rollback_lr_factor over the rollbacks so far
  int rollbacks = 0;
  std::set<long> skip_batches_at;   // steps whose batches a rollback skips
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
  void from_json(const nlohmann::json& j) {
    step = j.at("step").get<long>();
    adam_t = j.at("adam_t").get<long>();
    data_position = j.at("data_position").get<std::uint64_t>();
    global_micro_batch = j.value("global_micro_batch", std::uint64_t{0});  // absent before several ranks could train
    lr_factor = j.at("lr_factor").get<double>();
    rollbacks = j.at("rollbacks").get<int>();
    skip_batches_at = j.at("skip_batches_at").get<std::set<long>>();
    loss_spikes.from_json(j.at("loss_window"));
    grad_norm_spikes.from_json(j.at("grad_norm_window"));
  }
};

}  // namespace fsdp
