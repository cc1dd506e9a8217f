#include "parallel/replicated_state.h"

#include "parallel/device_collectives.h"

namespace fsdp {

ReplicatedState::ReplicatedState(Backend& be, const ParamLayout& layout, bool with_optimizer_state,
                                 Collectives* control, bool offload, Collectives* data, DType reduce)
    : be_(be), world_(control ? control : &alone_), data_(data ? data : world_), reduce_(reduce) {
  Allocator& a = be.allocator();
  units_.resize(layout.units.size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const std::size_t bytes = sizeof(float) * layout.units[u].numel;
    units_[u].numel = layout.units[u].numel;
    units_[u].params = a.allocate(MemoryCategory::params, bytes);
    units_[u].grads = a.allocate(MemoryCategory::grads, bytes);
    if (be.compute_dtype() != DType::f32)
      units_[u].compute = a.allocate(MemoryCategory::params, compute_bytes(be, units_[u].numel));
  }
  Allocator& moments = offload ? be.host_allocator() : a;
  for (std::size_t u = 0; u < units_.size() && with_optimizer_state; ++u) {
    const std::size_t bytes = sizeof(float) * layout.units[u].numel;
    units_[u].m = moments.allocate(MemoryCategory::optimizer, bytes);
    units_[u].v = moments.allocate(MemoryCategory::optimizer, bytes);
    be.fill(units_[u].m.f32(), units_[u].numel, 0.0f);
    be.fill(units_[u].v.f32(), units_[u].numel, 0.0f);
  }
  zero_grads();
}

const void* ReplicatedState::compute_params(int unit) {
  Unit& u = units_[unit];
  if (u.compute.empty()) return u.params.f32();
  if (u.stale) {
    be_.cast_from_f32(u.compute.data(), u.params.f32(), u.numel);
    u.stale = false;
  }
  return u.compute.data();
}

LocalShard ReplicatedState::local(int unit) {
  Unit& u = units_[unit];
  u.stale = true;  // the caller may write the masters
  return {u.params.f32(), u.grads.f32(), u.m.f32(), u.v.f32(), 0, u.numel};
}

LocalShard ReplicatedState::owned(int unit) {
  // Replicas own equal blocks of each unit, cut as a sharded strategy over the same ranks would
  // cut it: the gradient norm then adds the same partial sums whatever the strategy.
  const int W = world_->size(), r = world_->rank();
  LocalShard s = local(unit);
  const Blocks blocks{(s.count + W - 1) / W, s.count};
  const std::size_t at = blocks.offset(r);
  return {s.params + at, s.grads + at, s.m ? s.m + at : nullptr, s.v ? s.v + at : nullptr, at, blocks.count(r)};
}

void ReplicatedState::zero_grads() {
  for (auto& u : units_) be_.fill(u.grads.f32(), u.numel, 0.0f);
}

void ReplicatedState::post_backward(int unit) {
  // The gradients of the mean over ranks: each rank's backward was scaled by 1 / world size.
  if (!sync_ || data_->size() == 1) return;
  Unit& u = units_[unit];
  if (reduce_ == DType::f32) return data_->all_reduce(u.grads.f32(), u.numel, CommType::f32);
  Buffer cast = be_.allocator().allocate(MemoryCategory::comm, dtype_bytes(reduce_) * u.numel);
  be_.from_f32(cast.data(), reduce_, u.grads.f32(), u.numel);
  data_->all_reduce(cast.data(), u.numel, comm_type(reduce_));
  be_.to_f32(u.grads.f32(), cast.data(), reduce_, u.numel);
}

}  // namespace fsdp
