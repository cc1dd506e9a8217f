// One process holding every unit whole (NO_SHARD, world size 1): full float32 parameters,
// gradients and AdamW moments per unit, allocated up front as MEMORY.md plans them. Without
// optimizer state (a smoke step that never updates), local(u).m and .v are null.
#pragma once
#include <vector>

#include "model/param_layout.h"
#include "parallel/model_state.h"
#include "parallel/single_process.h"

namespace fsdp {

class ReplicatedState final : public ModelState {
 public:
  ReplicatedState(Backend& be, const ParamLayout& layout, bool with_optimizer_state = true);

  float* params(int unit) override { return units_[unit].params.f32(); }
  float* grads(int unit) override { return units_[unit].grads.f32(); }
  int unit_count() const override { return static_cast<int>(units_.size()); }
  LocalShard local(int unit) override;
  Collectives& collectives() override { return world_; }
  void zero_grads() override;

 private:
  struct Unit {
    Buffer params, grads, m, v;
    std::size_t numel = 0;
  };
  Backend& be_;
  SingleProcess world_;
  std::vector<Unit> units_;
};

}  // namespace fsdp
