#include "diagnostics/spike_detector.h"

#include <cmath>

namespace fsdp {

std::optional<double> SpikeDetector::check(double x) const {
  if (values_.size() < window_ || !std::isfinite(x)) return std::nullopt;
  double mean = 0, sq = 0;
  for (double v : values_) mean += v;
  mean /= static_cast<double>(values_.size());
  for (double v : values_) sq += (v - mean) * (v - mean);
  const double std = std::sqrt(sq / static_cast<double>(values_.size()));
  if (std <= 0) return std::nullopt;
  const double z = (x - mean) / std;
  if (z > zscore_) return z;
  return std::nullopt;
}

void SpikeDetector::add(double x) {
  if (!std::isfinite(x)) return;
  values_.push_back(x);
  while (values_.size() > window_) values_.pop_front();
}

nlohmann::json SpikeDetector::to_json() const {
  return nlohmann::json(std::vector<double>(values_.begin(), values_.end()));
}

void SpikeDetector::from_json(const nlohmann::json& j) {
  values_.clear();
  if (!j.is_array()) return;
  for (const auto& v : j) values_.push_back(v.get<double>());
}

}  // namespace fsdp
