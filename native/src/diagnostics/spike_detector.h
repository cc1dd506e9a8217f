// Loss spikes: a value more than spike_zscore standard deviations above the mean of the last
// spike_window values is a spike. Kept per metric (loss, gradient norm); only finite values of
// applied steps enter the window. Its contents are part of a checkpoint, so a resumed run sees
// the spikes an uninterrupted one would.
#pragma once
#include <deque>
#include <optional>

#include <nlohmann/json.hpp>

namespace fsdp {

class SpikeDetector {
 public:
  SpikeDetector(double zscore, int window) : zscore_(zscore), window_(window) {}

  /** The z-score of x against the full window when it is a spike. Does not add x. */
  std::optional<double> check(double x) const;
  void add(double x);

  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& j);

 private:
  double zscore_;
  std::size_t window_;
  std::deque<double> values_;
};

}  // namespace fsdp
