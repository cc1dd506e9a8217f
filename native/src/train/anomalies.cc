// The trainer's handling of non-finite values (stability.on_nan): locate, dump, then stop, skip
// the update, or roll back to the last good checkpoint, skip the offending batch and cut the
// learning rate. With several ranks the value may come from one rank's batch or shard: every rank
// re-runs the step, the lowest rank that found where it started says so (and writes the dump),
// and every rank then applies the same policy.
#include <cmath>
#include <filesystem>

#include "diagnostics/nan_dump.h"
#include "parallel/agreement.h"
#include "runtime/files.h"
#include "train/trainer.h"

namespace fsdp {

namespace {

std::string describe(const nlohmann::json& where) {
  std::string s = where.value("phase", "?");
  if (where.contains("layer") && !where["layer"].is_null())
    s += where["layer"].is_number() ? " layer " + where["layer"].dump() : " " + where["layer"].get<std::string>();
  if (where.contains("op") && where["op"].is_string()) s += " " + where["op"].get<std::string>();
  if (where.contains("param") && where["param"].is_string()) s += " (" + where["param"].get<std::string>() + ")";
  return s;
}

/** What one rank found, {where, is_nan} (null: nothing), as every rank will use it; and the rank that found it. */
std::pair<int, nlohmann::json> shared_finding(Collectives& world, const nlohmann::json& mine) {
  const auto [rank, text] = first_nonempty(world, mine.is_null() ? "" : mine.dump());
  if (rank < 0) return {0, nullptr};
  nlohmann::json finding = nlohmann::json::parse(text);
  if (world.size() > 1) finding["where"]["rank"] = rank;
  return {rank, finding};
}

}  // namespace

std::optional<RunResult> Trainer::handle_nonfinite(long step, const StepNumbers& n, std::uint64_t first_position,
                                                   const Planting* planted) {
  // Re-run the step with every op checked: the first non-finite output names the place.
  const int L = static_cast<int>(layout_.shape.L);
  state_->zero_grads();
  StepInspector inspector(*backend_, planted, true, L);
  std::vector<std::vector<std::int32_t>> tokens;
  run_micro_batches(step, first_position, &inspector, &tokens);
  state_->zero_grads();

  nlohmann::json found;
  if (const auto& f = inspector.first_forward()) {
    found = {{"where", {{"phase", "forward"}, {"layer", layer_name(f->layer, L)}, {"op", f->op}}},
             {"is_nan", f->is_nan}};
  } else if (const auto& b = inspector.first_backward()) {
    found = {{"where",
              {{"phase", "backward"},
               {"layer", layer_name(b->layer, L)},
               {"op", b->op},
               {"param", b->param.empty() ? nlohmann::json(nullptr) : nlohmann::json(b->param)}}},
             {"is_nan", b->is_nan}};
  }
  auto [finder, finding] = shared_finding(*world_, found);
  if (finding.is_null()) {
    // The re-run stayed finite: the value did not come from an op of this step.
    finding = {{"where", {{"phase", std::isfinite(n.loss) ? "backward" : "loss"}, {"layer", nullptr}, {"op", nullptr}}},
               {"is_nan", std::isnan(n.loss) || std::isnan(n.grad_norm)}};
  }
  std::string dump;
  if (world_->rank() == finder)
    dump = write_nan_dump(options_.run_dir, {step, finding["where"], tokens, inspector.stats(), L});
  dump = broadcast_string(*world_, dump, finder);
  return apply_nan_policy(step, n, finding["where"], finding["is_nan"].get<bool>() ? "nan" : "inf", dump);
}

std::optional<RunResult> Trainer::handle_bad_update(long step, const StepNumbers& n, const NonfiniteUpdate& bad) {
  const int L = static_cast<int>(layout_.shape.L);
  nlohmann::json where = {{"phase", "optimizer"},
                          {"layer", nullptr},
                          {"op", nullptr},
                          {"param", bad.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(bad.param)}};
  NanDump dump{step, nlohmann::json(), {}, {}, L};
  if (bad.unit >= 0) {
    const UnitLayout& unit = layout_.units[bad.unit];
    where["layer"] = layer_name(unit.kind == UnitKind::block       ? unit.layer
                                : unit.kind == UnitKind::embedding ? -1
                                                                   : L,
                                L);
    // Statistics of the unit's parameters and gradients the update was computed from.
    const LocalShard sh = state_->local(bad.unit);
    for (const auto& seg : unit.segments) {
      if (seg.name == bad.param) where["op"] = seg.op;
      if (seg.offset < sh.offset || seg.offset + seg.numel > sh.offset + sh.count) continue;
      dump.stats.push_back({"optimizer", "param", unit.layer, seg.op, seg.name,
                            backend_->stats(sh.params + seg.offset - sh.offset, seg.numel)});
      dump.stats.push_back({"optimizer", "param_grad", unit.layer, seg.op, seg.name,
                            backend_->stats(sh.grads + seg.offset - sh.offset, seg.numel)});
    }
  }
  // Under sharded optimizer state the bad values are in some ranks' shards only.
  auto [finder, finding] =
      shared_finding(*world_, bad.unit >= 0 ? nlohmann::json{{"where", where}, {"is_nan", true}} : nlohmann::json());
  if (!finding.is_null()) where = finding["where"];
  std::string path;
  if (world_->rank() == finder) {
    dump.where = where;
    path = write_nan_dump(options_.run_dir, dump);
  }
  path = broadcast_string(*world_, path, finder);
  state_->zero_grads();
  return apply_nan_policy(step, n, where, "nan", path);
}

std::optional<RunResult> Trainer::apply_nan_policy(long step, const StepNumbers& n, const nlohmann::json& where,
                                                   const std::string& kind, const std::string& dump) {
  const auto& stab = config_.stability;
  std::string action = stab.on_nan;
  std::string reason = kind + " at step " + std::to_string(step) + " in " + describe(where);
  nlohmann::json anomaly = {{"type", "anomaly"}, {"step", step}, {"kind", kind}, {"where", where}, {"dump", dump}};

  if (action == "rollback") {
    const std::string target = checkpoints_->newest_usable();
    const long target_step = target.empty() ? -1 : checkpoints_->step_of(target);
    if (st_.rollbacks >= stab.max_rollbacks) {
      action = "stop";
      reason += "; stability.max_rollbacks (" + std::to_string(stab.max_rollbacks) + ") reached";
    } else if (target.empty()) {
      action = "stop";
      reason += "; no complete checkpoint to roll back to";
    } else {
      anomaly["action"] = "rollback";
      anomaly["rollback_to"] = target_step;
      folder_->write(anomaly);
      // What the rollback changes survives it: more rollbacks, a smaller rate, one more skipped batch.
      const double lr_factor = st_.lr_factor * stab.rollback_lr_factor;
      const int rollbacks = st_.rollbacks + 1;
      std::set<long> skips = st_.skip_batches_at;
      skips.insert(step);
      load(target);
      st_.lr_factor = lr_factor;
      st_.rollbacks = rollbacks;
      st_.skip_batches_at = std::move(skips);
      folder_->log("warn", reason + ": rolled back to " + target + ", skipping the batch of step " +
                               std::to_string(step) + ", learning rate x" + std::to_string(st_.lr_factor));
      write_run_start(target);
      return std::nullopt;
    }
  }
  anomaly["action"] = action;
  folder_->write(anomaly);
  if (action == "skip") {
    // The update is dropped; the step counts, so the schedule and the data move on.
    st_.step = step;
    write_step(step, n.loss, n.lr, n.grad_norm, seconds_since(n.started), true);
    return std::nullopt;
  }
  return RunResult{RunStatus::failed, st_.step, reason};
}

}  // namespace fsdp
