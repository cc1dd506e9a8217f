// What the model sees of its parameters: the full parameters and gradient buffer of a unit (see
// model/param_layout.h), valid between the hooks the model calls around that unit's compute. A
// parallelism layer implements this to gather parameters before a unit runs, free them after,
// and reduce-scatter gradients after its backward; the model knows nothing of sharding.
//
// Contract: between pre_forward(u) and post_forward(u), and between pre_backward(u) and
// post_backward(u), params(v) is valid for v = u and for every v in layout.units[u].borrows (the
// head borrows the embeddings' wte when tied); grads(v) is valid between pre_backward(u) and
// post_backward(u) only (sharded gradients have no whole-unit buffer in forward). Activation
// checkpointing recomputes inside pre_backward/post_backward: no second pre_forward.
#pragma once
#include <cstddef>

namespace fsdp {

class UnitStorage {
 public:
  virtual ~UnitStorage() = default;

  /** The float32 parameters (masters). */
  virtual float* params(int unit) = 0;
  /**
   * The parameters as the matrix products read them, in the backend's compute dtype: the masters
   * themselves in float32, else a copy cast from them (FSDP's param_dtype; MEMORY.md compute_copy).
   */
  virtual const void* compute_params(int unit) { return params(unit); }
  /** Gradients accumulate here across micro-batches until the optimizer step. */
  virtual float* grads(int unit) = 0;

  virtual void pre_forward(int /*unit*/) {}
  virtual void post_forward(int /*unit*/) {}
  virtual void pre_backward(int /*unit*/) {}
  virtual void post_backward(int /*unit*/) {}
};

}  // namespace fsdp
