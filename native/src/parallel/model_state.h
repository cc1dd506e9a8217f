// Parameters, gradients and AdamW moments of every unit, as a rank holds them. The model reaches
// full units through the UnitStorage hooks; the optimizer, the gradient norm and checkpoints work
// on each unit's local flat range (the whole unit when nothing is sharded; a shard under the ZeRO
// strategies). Implementations: parallel/replicated_state.h (NO_SHARD, DDP) and
// parallel/sharded_state.h (SHARD_OPTIMIZER … HYBRID_SHARD); parallel/strategy.h picks one.
#pragma once
#include <cstddef>

#include "backend/backend.h"
#include "model/unit_storage.h"
#include "parallel/collectives.h"

namespace fsdp {

/** This rank's range [offset, offset + count) of a unit, and its state there. */
struct LocalShard {
  float* params;
  float* grads;
  float* m;
  float* v;
  std::size_t offset, count;
};

class ModelState : public UnitStorage {
 public:
  virtual int unit_count() const = 0;
  virtual LocalShard local(int unit) = 0;
  /**
   * The part of local(unit) this rank answers for: over the world every element of every unit is
   * owned by exactly one rank. The gradient norm sums owned ranges, and a sharded checkpoint holds
   * each rank's owned ranges, so replicas are neither counted nor written twice.
   */
  virtual LocalShard owned(int unit) { return local(unit); }
  /** Every rank of the run (agreement on non-finite updates, the gradient norm). */
  virtual Collectives& collectives() = 0;
  virtual void zero_grads() = 0;
  /**
   * Whether the coming micro-step's backward reduces gradients across ranks. Off on the
   * non-final micro-steps of gradient accumulation (PyTorch's no_sync): gradients accumulate
   * locally and are communicated once per optimizer step.
   */
  virtual void set_gradient_sync(bool /*sync*/) {}
  /** Global L2 norm of the gradients across units, shards and ranks (through the collectives). */
  double grad_norm(Backend& be);
  /**
   * The local ranges of the parameters were written (by the optimizer, initialisation or a
   * checkpoint): make every rank's copies agree (ZeRO-1/2 all-gather the updated shards here).
   */
  virtual void publish_params() {}
  /** The backend whose GPU memory holds the local ranges, or null when they are host memory (checkpoints copy through
   * the host). */
  virtual Backend* device() { return nullptr; }
};

}  // namespace fsdp
