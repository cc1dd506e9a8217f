#include "parallel/sharded_state.h"

#include <stdexcept>

#include "parallel/device_collectives.h"

namespace fsdp {

ShardedState::ShardedState(Backend& be, const ParamLayout& layout, Collectives& control, ProcessGroups groups,
                           ShardingSpec spec)
    : be_(be),
      layout_(layout),
      control_(control),
      groups_(std::move(groups)),
      spec_(spec),
      param_dtype_(spec.param_dtype),
      reduce_dtype_(spec.reduce_dtype) {
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
    if (!spec_.params && param_dtype_ != DType::f32)
      x.compute = device.allocate(MemoryCategory::params, dtype_bytes(param_dtype_) * x.numel);
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
  // Sharded units are gathered in param_dtype: float32 whole parameters exist only when that is float32.
  if (param_dtype_ != DType::f32)
    throw std::logic_error(layout_.units[unit].name + ": gathered in " + dtype_name(param_dtype_) +
                           ", not float32: read compute_params");
  return x.gathered.f32();
}

const void* ShardedState::compute_params(int unit) {
  Unit& x = units_[unit];
  if (spec_.params) {
    if (x.gathered.empty()) throw std::logic_error(layout_.units[unit].name + ": parameters read while not gathered");
    return x.gathered.data();
  }
  if (x.compute.empty()) return x.params.f32();
  if (x.stale) {
    be_.from_f32(x.compute.data(), param_dtype_, x.params.f32(), x.numel);
    x.stale = false;
  }
  return x.compute.data();
}

float* ShardedState::grads(int unit) {
  return spec_.grads ? units_[unit].unit_grads.f32() : units_[unit].grads.f32();
}

LocalShard ShardedState::local(int unit) {
  Unit& x = units_[unit];
  x.stale = true;  // the caller may write the masters
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

const void* ShardedState::gather_source(Unit& x) {
  // The shard as the gather sends it: itself when it is float32 in device memory; else cast to
  // param_dtype (or, offloaded on a GPU, copied to the device) into a comm buffer that lives until
  // the gather is done.
  const bool offloaded = spec_.offload && !be_.host_memory();
  if (param_dtype_ == DType::f32 && !offloaded) return x.params.f32();
  x.send = be_.allocator().allocate(MemoryCategory::comm, dtype_bytes(param_dtype_) * x.shard);
  be_.from_f32(x.send.data(), param_dtype_, x.params.f32(), x.shard);
  return x.send.data();
}

void ShardedState::require(int unit) {
  Unit& x = units_[unit];
  if (x.gathering) {
    x.gathering->wait();
    x.gathering.reset();
    x.send.reset();
  } else if (x.gathered.empty()) {
    x.gathered = be_.allocator().allocate(MemoryCategory::params, dtype_bytes(param_dtype_) * x.padded);
    groups_.shard->all_gather(gather_source(x), x.gathered.data(), x.shard, comm_type(param_dtype_));
    x.send.reset();
  }
}

void ShardedState::prefetch(int unit) {
  Unit& x = units_[unit];
  if (!x.gathered.empty()) return;
  x.gathered = be_.allocator().allocate(MemoryCategory::params, dtype_bytes(param_dtype_) * x.padded);
  x.gathering = groups_.shard->start_all_gather(gather_source(x), x.gathered.data(), x.shard, comm_type(param_dtype_));
}

void ShardedState::release(int unit) {
  Unit& x = units_[unit];
  x.gathering.reset();  // waits for a prefetch nobody used
  x.send.reset();
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
  const CommType r = comm_type(reduce_dtype_);
  const std::size_t rb = dtype_bytes(reduce_dtype_);
  if (!spec_.grads) {
    // ZeRO-1: the shard's sum lands in place; the rest of the whole buffer is left as scratch.
    if (reduce_dtype_ == DType::f32)
      return groups_.shard->reduce_scatter_in_place(x.grads.f32(), x.blocks, CommType::f32);
    Buffer cast = be_.allocator().allocate(MemoryCategory::comm, rb * x.numel);
    be_.from_f32(cast.data(), reduce_dtype_, x.grads.f32(), x.numel);
    groups_.shard->reduce_scatter_in_place(cast.data(), x.blocks, r);
    be_.to_f32(x.grads.f32() + x.offset, static_cast<char*>(cast.data()) + rb * x.offset, reduce_dtype_, x.count);
    return;
  }
  Buffer out = be_.allocator().allocate(MemoryCategory::comm, rb * x.shard);
  if (reduce_dtype_ == DType::f32) {
    groups_.shard->reduce_scatter(x.unit_grads.f32(), out.data(), x.shard, r);
  } else {
    Buffer cast = be_.allocator().allocate(MemoryCategory::comm, rb * x.padded);
    be_.from_f32(cast.data(), reduce_dtype_, x.unit_grads.f32(), x.padded);
    groups_.shard->reduce_scatter(cast.data(), out.data(), x.shard, r);
  }
  x.unit_grads.reset();
  if (groups_.replicas->size() > 1) groups_.replicas->all_reduce(out.data(), x.shard, r);
  // With offload the shard lives in host memory: this conversion is where it moves there.
  be_.to_f32(x.grads.f32(), out.data(), reduce_dtype_, x.shard);
}

void ShardedState::publish_params() {
  for (auto& x : units_) x.stale = true;
  if (spec_.params) return;  // the shards are the parameters; gathers read them fresh
  for (auto& x : units_) groups_.shard->all_gather_in_place(x.params.f32(), x.blocks, CommType::f32);
}

}  // namespace fsdp
