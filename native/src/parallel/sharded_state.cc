#include "parallel/sharded_state.h"

#include <stdexcept>

namespace fsdp {


ShardedState::ShardedState(Backend& be, const ParamLayout& layout, ProcessGroups groups, ShardingSpec spec)
    : be_(be), layout_(layout), groups_(std::move(groups)), spec_(spec) {
  Collectives& shard = *groups_.shard;
  const std::size_t D = static_cast<std::size_t>(shard.size());
  Allocator& device = be.allocator();
  Allocator& host = be.host_allocator();
  // What cpu_offload moves to host memory (MEMORY.md "host"): the moments, and with sharded
  // parameters the parameter and gradient shards too.
  Allocator& state_memory = spec_.offload && spec_.params ? host : device;
  Allocator& moment_memory = spec_.offload ? host : device;

  units_.resize(layout.units.size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    Unit& x = units_[u];
    x.numel = layout.units[u].numel;
    x.shard = (x.numel + D - 1) / D;
    x.padded = x.shard * D;
    x.blocks = {x.shard, x.numel};
    x.offset = x.blocks.offset(shard.rank());
    x.count = x.blocks.count(shard.rank());
    const std::size_t whole = sizeof(float) * x.numel, piece = sizeof(float) * x.shard;
    x.params = (spec_.params ? state_memory : device).allocate(MemoryCategory::params, spec_.params ? piece : whole);
    x.grads = (spec_.grads ? state_memory : device).allocate(MemoryCategory::grads, spec_.grads ? piece : whole);
    // The padding of the last shard is gathered with the rest: it must hold zeros, not garbage.
    if (spec_.params) be.fill(x.params.f32(), x.shard, 0.0f);
  }
  for (auto& x : units_) {
    x.m = moment_memory.allocate(MemoryCategory::optimizer, sizeof(float) * x.shard);
    x.v = moment_memory.allocate(MemoryCategory::optimizer, sizeof(float) * x.shard);
    be.fill(x.m.f32(), x.shard, 0.0f);
    be.fill(x.v.f32(), x.shard, 0.0f);
  }
  zero_grads();
}

ShardedState::~ShardedState() {
  // Asynchronous gathers still in flight write into buffers about to be freed: finish them first.
  for (auto& x : units_) x.gathering.reset();
}

float* ShardedState::params(int unit) {
  Unit& x = units_[unit];
  if (!spec_.params) return x.params.f32();
  if (x.gathered.empty()) throw std::logic_error(layout_.units[unit].name + ": parameters read while not gathered");
  return x.gathered.f32();
}

float* ShardedState::grads(int unit) { return spec_.grads ? units_[unit].unit_grads.f32() : units_[unit].grads.f32(); }

LocalShard ShardedState::local(int unit) {
  Unit& x = units_[unit];
  // Whole buffers hold the shard at its place in the unit; shard buffers hold only it.
  float* p = spec_.params ? x.params.f32() : x.params.f32() + x.offset;
  float* g = spec_.grads ? x.grads.f32() : x.grads.f32() + x.offset;
  return {p, g, x.m.f32(), x.v.f32(), x.offset, x.count};
}

LocalShard ShardedState::owned(int unit) {
  // Replica groups hold the same shards: the first one answers for them.
  LocalShard s = local(unit);
  if (groups_.replicas->rank() != 0) s.count = 0;
  return s;
}

void ShardedState::zero_grads() {
  for (auto& x : units_) {
    x.unit_grads.reset();
    be_.fill(x.grads.f32(), x.grads.bytes() / sizeof(float), 0.0f);
  }
}

// --- the hooks the model calls around each unit ---------------------------------------------------

void ShardedState::pre_forward(int unit) {
  if (!spec_.params) return;
  require(unit);
  if (tied_head(unit)) require(0);
  if (spec_.forward_prefetch && unit + 1 < unit_count()) prefetch(unit + 1);
}

void ShardedState::post_forward(int unit) {
  if (!spec_.params) return;
  release(unit);
  if (tied_head(unit)) release(0);
}

void ShardedState::pre_backward(int unit) {
  if (spec_.params) {
    require(unit);
    if (tied_head(unit)) require(0);
    if (spec_.backward_prefetch == BackwardPrefetch::pre && unit >= 1) prefetch(unit - 1);
  }
  if (spec_.grads) {
    ensure_unit_grads(unit);
    // The head's backward writes the tied wte's gradient; it is reduced after the embeddings' backward.
    if (tied_head(unit)) ensure_unit_grads(0);
  }
}

void ShardedState::post_backward(int unit) {
  if (spec_.params) {
    if (spec_.backward_prefetch == BackwardPrefetch::post && unit >= 1) prefetch(unit - 1);
    release(unit);
    if (tied_head(unit)) release(0);
  }
  if (sync_) reduce(unit);
}

// --- gathering parameters -----------------------------------------------------------------------

void ShardedState::require(int unit) {
  Unit& x = units_[unit];
  if (x.gathering) {
    x.gathering->wait();
    x.gathering.reset();
  } else if (x.gathered.empty()) {
    x.gathered = be_.allocator().allocate(MemoryCategory::params, sizeof(float) * x.padded);
    groups_.shard->all_gather(x.params.f32(), x.gathered.f32(), x.shard, CommType::f32);
  }
}

void ShardedState::prefetch(int unit) {
  Unit& x = units_[unit];
  if (!x.gathered.empty()) return;
  x.gathered = be_.allocator().allocate(MemoryCategory::params, sizeof(float) * x.padded);
  x.gathering = groups_.shard->start_all_gather(x.params.f32(), x.gathered.f32(), x.shard, CommType::f32);
}

void ShardedState::release(int unit) {
  Unit& x = units_[unit];
  x.gathering.reset();  // waits for a prefetch nobody used
  x.gathered.reset();
}

// --- reducing gradients -------------------------------------------------------------------------

void ShardedState::ensure_unit_grads(int unit) {
  Unit& x = units_[unit];
  if (!x.unit_grads.empty()) return;  // accumulating over micro-steps without sync
  x.unit_grads = be_.allocator().allocate(MemoryCategory::grads, sizeof(float) * x.padded);
  be_.fill(x.unit_grads.f32(), x.padded, 0.0f);
}

void ShardedState::reduce(int unit) {
  Unit& x = units_[unit];
  if (!spec_.grads) {
    // ZeRO-1: the shard's sum lands in place; the rest of the whole buffer is left as scratch.
    groups_.shard->reduce_scatter_in_place(x.grads.f32(), x.blocks, CommType::f32);
    return;
  }
  Buffer out = be_.allocator().allocate(MemoryCategory::comm, sizeof(float) * x.shard);
  groups_.shard->reduce_scatter(x.unit_grads.f32(), out.f32(), x.shard, CommType::f32);
  x.unit_grads.reset();
  if (groups_.replicas->size() > 1) groups_.replicas->all_reduce(out.f32(), x.shard, CommType::f32);
  // With offload the shard lives in host memory: this copy is where a GPU backend moves it there.
  be_.copy(x.grads.f32(), out.f32(), x.shard);
}

void ShardedState::publish_params() {
  if (spec_.params) return;  // the shards are the parameters; gathers read them fresh
  for (auto& x : units_) groups_.shard->all_gather_in_place(x.params.f32(), x.blocks, CommType::f32);
}

}  // namespace fsdp
