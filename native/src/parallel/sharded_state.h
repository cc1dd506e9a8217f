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
//                             backward_prefetch start the next unit's gather early (asynchronously).
//   HYBRID_SHARD              FULL_SHARD within a shard group (a node), gradients of the shard then
//                             all-reduced across the replica group.
//
// fsdp.cpu_offload keeps the AdamW moments — and, when parameters are sharded, the parameter and
// gradient shards — in the backend's host memory. The model sees none of this: it reaches whole
// units through the UnitStorage hooks (model/unit_storage.h).
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
};

class ShardedState final : public ModelState {
 public:
  ShardedState(Backend& be, const ParamLayout& layout, ProcessGroups groups, ShardingSpec spec);
  ~ShardedState() override;

  float* params(int unit) override;
  /** Sharded gradients: the whole-unit buffer between the unit's backward and its reduce-scatter (null otherwise). */
  float* grads(int unit) override;
  void pre_forward(int unit) override;
  void post_forward(int unit) override;
  void pre_backward(int unit) override;
  void post_backward(int unit) override;

  int unit_count() const override { return static_cast<int>(units_.size()); }
  LocalShard local(int unit) override;
  LocalShard owned(int unit) override;
  Collectives& collectives() override { return *groups_.world; }
  void zero_grads() override;
  void set_gradient_sync(bool sync) override { sync_ = sync; }
  void publish_params() override;

 private:
  struct Unit {
    std::size_t numel = 0, shard = 0, padded = 0;  // P, S = ceil(P / D), Pp = D S
    Blocks blocks{0, 0};                           // the unit cut in shards; this rank's is blocks.offset/count(rank)
    std::size_t offset = 0, count = 0;             // this rank's shard of the unit (count < S for the last ranks)
    Buffer params;    // whole (P) when parameters are not sharded, else the shard (S)
    Buffer grads;     // whole (P) when gradients are not sharded, else the shard (S)
    Buffer m, v;      // AdamW moments of the shard (S)
    Buffer gathered;  // parameters sharded: the whole unit (Pp) while it computes
    std::unique_ptr<PendingCollective> gathering;  // a prefetch in flight into `gathered`
    Buffer unit_grads;  // gradients sharded: the whole unit's gradients (Pp) from its backward to its reduce-scatter
  };
  void require(int unit);
  void prefetch(int unit);
  void release(int unit);
  void ensure_unit_grads(int unit);
  void reduce(int unit);
  bool tied_head(int unit) const { return unit == unit_count() - 1 && layout_.shape.tied; }

  Backend& be_;
  const ParamLayout& layout_;
  ProcessGroups groups_;
  ShardingSpec spec_;
  std::vector<Unit> units_;
  bool sync_ = true;
};

}  // namespace fsdp
