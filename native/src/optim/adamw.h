// AdamW over the units' local flat ranges, with decay / no-decay groups (decay applies to matrix
// weights only: not to biases, LayerNorm weights or embeddings) and layer-wise learning-rate
// decay (lower layers get smaller rates). A step is checked whole before anything is written, so
// a non-finite update can be refused (stability.on_nan: skip) and located.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "config/run_config.h"
#include "model/param_layout.h"
#include "parallel/model_state.h"

namespace fsdp {

/** Where an update was not finite: the unit and the first parameter tensor holding such a value. */
struct NonfiniteUpdate {
  int unit = -1;
  std::string param;
  std::uint64_t count = 0;
};

/** debug.inject_nan in the optimizer phase: the first element of this parameter's update is made NaN. */
struct UpdatePoison {
  int unit = -1;
  std::string param_suffix;  // e.g. "attn.qkv.weight"
};

class AdamW {
 public:
  AdamW(Backend& be, const ParamLayout& layout, const TrainingConfig& t);

  /**
   * The update of optimizer step `t` (1-based count of applied updates) at learning rate `lr`, with
   * gradients multiplied by `grad_scale` (clipping). Applies it only when every new value is
   * finite; otherwise writes nothing and returns where it was not. `grad_norm` (before clipping)
   * lets it skip the checking pass when the update is finite by construction.
   */
  std::optional<NonfiniteUpdate> step(ModelState& state, long t, double lr, float grad_scale, double grad_norm,
                                      const UpdatePoison* poison = nullptr);

 private:
  template <class F>
  void for_each_range(ModelState& state, long t, double lr, float grad_scale, const UpdatePoison* poison, F&& f);

  Backend& be_;
  const ParamLayout& layout_;
  TrainingConfig t_;
};

}  // namespace fsdp
