// Parameters, gradients and AdamW moments of every unit, as a rank holds them. The model reaches
// full units through the UnitStorage hooks; the optimizer, the gradient norm and checkpoints work
// on each unit's local flat range (the whole unit on one rank; a shard under FSDP strategies).
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
  virtual Collectives& collectives() = 0;
  virtual void zero_grads() = 0;
  /** Global L2 norm of the gradients across units, shards and ranks (through the collectives). */
  virtual double grad_norm(Backend& be);
  /** After the optimizer wrote the local ranges (ZeRO-1/2 all-gather the updated parameters here). */
  virtual void after_optimizer_step() {}
};

}  // namespace fsdp
