#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

namespace fsdp {

AdamW::AdamW(Backend& be, const ParamLayout& layout, const TrainingConfig& t) : be_(be), layout_(layout), t_(t) {}

template <class F>
void AdamW::for_each_range(ModelState& state, long step, double lr, float grad_scale, const UpdatePoison* poison,
                           F&& f) {
  const float bc1 = static_cast<float>(1.0 - std::pow(t_.beta1, static_cast<double>(step)));
  const float bc2 = static_cast<float>(1.0 - std::pow(t_.beta2, static_cast<double>(step)));
  for (int u = 0; u < state.unit_count(); ++u) {
    const LocalShard sh = state.local(u);
    const UnitLayout& unit = layout_.units[u];
    const double unit_lr = lr * layout_.lr_scale(u, t_.layer_lr_decay);
    for (const auto& seg : unit.segments) {
      // The part of this parameter tensor inside the rank's range.
      const std::size_t lo = std::max(sh.offset, seg.offset),
                        hi = std::min(sh.offset + sh.count, seg.offset + seg.numel);
      if (lo >= hi) continue;
      const std::size_t at = lo - sh.offset;
      AdamWArgs a{sh.params + at,
                  sh.grads + at,
                  sh.m + at,
                  sh.v + at,
                  hi - lo,
                  static_cast<float>(unit_lr),
                  static_cast<float>(t_.beta1),
                  static_cast<float>(t_.beta2),
                  static_cast<float>(t_.eps),
                  seg.decay ? static_cast<float>(t_.weight_decay) : 0.0f,
                  grad_scale,
                  bc1,
                  bc2,
                  -1};
      const bool poisoned = poison && poison->unit == u && seg.name.size() >= poison->param_suffix.size() &&
                            seg.name.compare(seg.name.size() - poison->param_suffix.size(), poison->param_suffix.size(),
                                             poison->param_suffix) == 0;
      if (poisoned && lo == seg.offset) a.poison = 0;
      f(u, seg, a);
    }
  }
}

namespace {

/**
 * Whether the update is finite without looking: with finite parameters and moments (every applied
 * update was finite, and checkpoints are checked), every clipped gradient |g| <= the clipped norm,
 * so g^2 cannot overflow float32 below 1e18; Adam's step m_hat / (sqrt(v_hat) + eps) is bounded
 * by (1 - beta1) / sqrt(1 - beta2) per bias-corrected step; and lr, eps and the decay are finite.
 */
bool certainly_finite(double lr, float grad_scale, double grad_norm, const TrainingConfig& t) {
  return std::isfinite(grad_norm) && grad_norm * grad_scale < 1e18 && std::isfinite(lr) && t.eps > 0 &&
         std::isfinite(t.weight_decay);
}

}  // namespace

std::optional<NonfiniteUpdate> AdamW::step(ModelState& state, long t, double lr, float grad_scale, double grad_norm,
                                           const UpdatePoison* poison) {
  if (!poison && certainly_finite(lr, grad_scale, grad_norm, t_)) {
    for_each_range(state, t, lr, grad_scale, nullptr,
                   [&](int, const ParamSegment&, const AdamWArgs& a) { be_.adamw_apply(a); });
    state.publish_params();
    return std::nullopt;
  }
  std::optional<NonfiniteUpdate> bad;
  for_each_range(state, t, lr, grad_scale, poison, [&](int u, const ParamSegment& seg, const AdamWArgs& a) {
    const std::uint64_t n = be_.adamw_check(a);
    if (n == 0) return;
    if (!bad) bad = NonfiniteUpdate{u, seg.name, 0};
    bad->count += n;
  });
  // Every rank must agree: one rank's non-finite update refuses the step everywhere.
  double count = bad ? static_cast<double>(bad->count) : 0.0;
  state.collectives().all_reduce(&count, 1, CommType::f64);
  if (count > 0) return bad ? bad : NonfiniteUpdate{-1, "", static_cast<std::uint64_t>(count)};
  for_each_range(state, t, lr, grad_scale, poison,
                 [&](int, const ParamSegment&, const AdamWArgs& a) { be_.adamw_apply(a); });
  state.publish_params();
  return std::nullopt;
}

}  // namespace fsdp
