#include "parallel/replicated_state.h"

namespace fsdp {

ReplicatedState::ReplicatedState(Backend& be, const ParamLayout& layout, bool with_optimizer_state) : be_(be) {
  Allocator& a = be.allocator();
  units_.resize(layout.units.size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const std::size_t bytes = sizeof(float) * layout.units[u].numel;
    units_[u].numel = layout.units[u].numel;
    units_[u].params = a.allocate(MemoryCategory::params, bytes);
    units_[u].grads = a.allocate(MemoryCategory::grads, bytes);
  }
  for (std::size_t u = 0; u < units_.size() && with_optimizer_state; ++u) {
    const std::size_t bytes = sizeof(float) * layout.units[u].numel;
    units_[u].m = a.allocate(MemoryCategory::optimizer, bytes);
    units_[u].v = a.allocate(MemoryCategory::optimizer, bytes);
    be.fill(units_[u].m.f32(), units_[u].numel, 0.0f);
    be.fill(units_[u].v.f32(), units_[u].numel, 0.0f);
  }
  zero_grads();
}

LocalShard ReplicatedState::local(int unit) {
  Unit& u = units_[unit];
  return {u.params.f32(), u.grads.f32(), u.m.f32(), u.v.f32(), 0, u.numel};
}

void ReplicatedState::zero_grads() {
  for (auto& u : units_) be_.fill(u.grads.f32(), u.numel, 0.0f);
}

}  // namespace fsdp
