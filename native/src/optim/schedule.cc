#include "optim/schedule.h"

#include <algorithm>
#include <cmath>

namespace fsdp {

namespace {

constexpr double kPi = 3.14159265358979323846;

/** From `from` to `to` along half a cosine as progress goes from 0 to 1. */
double cosine(double from, double to, double progress) {
  return to + (from - to) * 0.5 * (1.0 + std::cos(kPi * std::clamp(progress, 0.0, 1.0)));
}

double linear(double from, double to, double progress) {
  return from + (to - from) * std::clamp(progress, 0.0, 1.0);
}

}  // namespace

double scheduled_lr(const TrainingConfig& t, long step) {
  const double peak = t.learning_rate, floor = t.learning_rate * t.min_lr_ratio;
  const double s = static_cast<double>(step), total = static_cast<double>(t.max_steps);
  const double warmup = static_cast<double>(t.warmup_steps);

  if (t.schedule == "one_cycle") {
    // As PyTorch's OneCycleLR: step 1 runs at peak / 25, the rate rises along a cosine to the peak
    // at step `rise` (the warmup, or 30% of the steps when warmup_steps is 0), then falls along a
    // cosine to the floor at the last step. (Checked against OneCycleLR by the reference fixtures.)
    const double rise = warmup > 0 ? warmup : std::max(1.0, std::round(0.3 * total));
    if (s <= rise) return rise > 1 ? cosine(peak / 25.0, peak, (s - 1) / (rise - 1)) : peak;
    return cosine(peak, floor, (s - rise) / std::max(1.0, total - rise));
  }
  if (warmup > 0 && s <= warmup) return peak * s / warmup;
  const double after = std::max(1.0, total - warmup);
  if (t.schedule == "warmup_cosine") return cosine(peak, floor, (s - warmup) / after);
  if (t.schedule == "linear") return linear(peak, floor, (s - warmup) / after);
  if (t.schedule == "wsd") {
    // Warmup, stable at the peak, then linear decay to the floor over the last decay_ratio of the steps.
    const double decay_start = std::max(warmup, total - std::round(t.decay_ratio * total));
    if (s <= decay_start) return peak;
    return linear(peak, floor, (s - decay_start) / std::max(1.0, total - decay_start));
  }
  return peak;  // constant
}

}  // namespace fsdp
