// Every unit whole on every rank (NO_SHARD; DDP when there are several ranks): full float32
// parameters, gradients and AdamW moments per unit, allocated up front as MEMORY.md plans them.
// With several ranks each unit's gradients are all-reduced right after its backward on the final
// micro-step, through the device collectives, in reduce_dtype (cast into a comm buffer and back
// when it is narrower than float32). Without optimizer state (a smoke step that never updates), local(u).m and .v are
// null. With fsdp.cpu_offload the moments live in the backend's host memory.
// When the backend computes in bfloat16/float16, each unit also keeps a copy of its parameters in
// that dtype (MEMORY.md compute_copy), cast again from the masters after anything may have
// written them through local() (the optimizer, initialisation, a checkpoint load).
#pragma once
#include <vector>

#include "model/param_layout.h"
#include "parallel/model_state.h"
#include "parallel/single_process.h"

namespace fsdp {

class ReplicatedState final : public ModelState {
 public:
  /**
   * control: the ranks that replicate the model (host values: norms, agreement); nullptr for one
   * process. data: the device collectives over the same ranks (nullptr: control carries the
   * buffers too, as on the CPU). reduce: mixed_precision.reduce_dtype.
   */
  ReplicatedState(Backend& be, const ParamLayout& layout, bool with_optimizer_state = true,
                  Collectives* control = nullptr, bool offload = false, Collectives* data = nullptr,
                  DType reduce = DType::f32);

  float* params(int unit) override { return units_[unit].params.f32(); }
  const void* compute_params(int unit) override;
  float* grads(int unit) override { return units_[unit].grads.f32(); }
  int unit_count() const override { return static_cast<int>(units_.size()); }
  LocalShard local(int unit) override;
  LocalShard owned(int unit) override;
  Collectives& collectives() override { return *world_; }
  Backend* device() override { return be_.host_memory() ? nullptr : &be_; }
  void zero_grads() override;
  void set_gradient_sync(bool sync) override { sync_ = sync; }
  void post_backward(int unit) override;

 private:
  struct Unit {
    Buffer params, grads, m, v;
    Buffer compute;     // params in the backend's compute dtype (empty in float32)
    bool stale = true;  // compute does not yet hold the current masters
    std::size_t numel = 0;
  };
  Backend& be_;
  SingleProcess alone_;
  Collectives* world_;
  Collectives* data_;
  DType reduce_;
  std::vector<Unit> units_;
  bool sync_ = true;
};

}  // namespace fsdp
