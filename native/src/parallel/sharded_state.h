// The ZeRO family, each strategy a choice of what is sharded and when it is gathered (the table
// of native/MEMORY.md): every unit's flat buffer is cut into D equal shards of S = ceil(P / D)
// elements, the last one padded, one per rank of the shard group.
//
//   SHARD_OPTIMIZER (ZeRO-1)  AdamW moments sharded. Gradients whole; on the final micro-step each
//                             unit's are reduce-scattered in place after its backward; after the
//                             update the shards of the parameters are all-gathered in place.
//   SHARD_GRAD_OP (ZeRO-2)    Gradients sharded too: a unit's backward writes a whole-unit buffer
//                             that is reduce-scattered into the shard, then freed.
//   FULL_SHARD (ZeRO-3)       Parameters sharded too: a unit is all-gathered before its forward and
//                             again before its backward, and freed after each; forward_prefetch and
//                             backward_prefetch start the next unit's gather early (asynchronously:
//                             on a GPU it runs on the collectives' stream while this unit computes).
//   HYBRID_SHARD              FULL_SHARD within a shard group (a node), gradients of the shard then
//                             all-reduced across the replica group.
//
// Precision (mixed_precision): masters, gradients and moments are float32. Sharded parameters are
// gathered in param_dtype (the backend's compute dtype: each rank casts its shard into a comm
// buffer and the gather fills a param_dtype unit); whole parameters keep a param_dtype copy cast
// from the masters after each write. Gradients are reduced in reduce_dtype: cast into a comm
// buffer, reduced, and the rank's part converted back to float32.
//
// fsdp.cpu_offload keeps the AdamW moments — and, when parameters are sharded, the parameter and
// gradient shards — in the backend's host memory (pinned on a GPU, where the kernels reach it
// through unified addressing; gathers then send from a device copy). The model sees none of
// this: it reaches whole units through the UnitStorage hooks (model/unit_storage.h).
#pragma once
#include <memory>
#include <vector>

#include "model/param_layout.h"
#include "parallel/model_state.h"
#include "parallel/process_groups.h"

namespace fsdp {

enum class BackwardPrefetch { none, pre, post };

struct ShardingSpec {
  bool grads = false;   // gradients sharded (SHARD_GRAD_OP and beyond)
  bool params = false;  // parameters sharded (FULL_SHARD, HYBRID_SHARD)
  bool offload = false;
  bool forward_prefetch = false;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::pre;
  DType param_dtype =
      DType::f32;  // what the model computes with: the backend's compute dtype (mixed_precision.param_dtype)
  DType reduce_dtype = DType::f32;  // mixed_precision.reduce_dtype
};

class ShardedState final : public ModelState {
 public:
  /** control: every rank, host values (norms, agreement); groups: the device collectives' shard and replica groups. */
  ShardedState(Backend& be, const ParamLayout& layout, Collectives& control, ProcessGroups groups, ShardingSpec spec);
  ~ShardedState() override;

  /** The float32 parameters of a whole unit: not sharded, or gathered in float32 (param_dtype float32). */
  float* params(int unit) override;
  const void* compute_params(int unit) override;
  /** Sharded gradients: the whole-unit buffer between the unit's backward and its reduce-scatter (null otherwise). */
  float* grads(int unit) override;
  void pre_forward(int unit) override;
  void post_forward(int unit) override;
  void pre_backward(int unit) override;
  void post_backward(int unit) override;

  int unit_count() const override { return static_cast<int>(units_.size()); }
  LocalShard local(int unit) override;
  LocalShard owned(int unit) override;
  Collectives& collectives() override { return control_; }
  Backend* device() override { return be_.host_memory() ? nullptr : &be_; }
  void zero_grads() override;
  void set_gradient_sync(bool sync) override { sync_ = sync; }
  void publish_params() override;

 private:
  struct Unit {
    std::size_t numel = 0, shard = 0, padded = 0;  // P, S = ceil(P / D), Pp = D S
    Blocks blocks{0, 0};                           // the unit cut in shards; this rank's is blocks.offset/count(rank)
    std::size_t offset = 0, count = 0;             // this rank's shard of the unit (count < S for the last ranks)
    Buffer params;      // float32 masters: whole (P) when parameters are not sharded, else the shard (S)
    Buffer compute;     // parameters not sharded, param_dtype narrower than float32: their copy in it (P)
    bool stale = true;  // compute does not hold the current masters yet
    Buffer grads;       // whole (P) when gradients are not sharded, else the shard (S)
    Buffer m, v;        // AdamW moments of the shard (S)
    Buffer gathered;    // parameters sharded: the whole unit (Pp, param_dtype) while it computes
    Buffer send;        // what the gather in flight sends: the shard cast to param_dtype (comm, S)
    std::unique_ptr<PendingCollective> gathering;  // a prefetch in flight into `gathered`
    Buffer unit_grads;  // gradients sharded: the whole unit's gradients (Pp) from its backward to its reduce-scatter
  };
  void require(int unit);
  void prefetch(int unit);
  void release(int unit);
  const void* gather_source(Unit& x);
  void ensure_unit_grads(int unit);
  void reduce(int unit);
  bool tied_head(int unit) const { return unit == unit_count() - 1 && layout_.shape.tied; }

  Backend& be_;
  const ParamLayout& layout_;
  Collectives& control_;
  ProcessGroups groups_;
  ShardingSpec spec_;
  DType param_dtype_, reduce_dtype_;
  std::vector<Unit> units_;
  bool sync_ = true;
};

}  // namespace fsdp
