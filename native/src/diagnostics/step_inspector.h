// Looks inside a step op by op (a StepProbe): plants debug.inject_nan's NaN where the config says,
// finds the first op whose output holds a non-finite value — forward: which layer and op; backward:
// which op and which parameter's gradient first — and collects per-op statistics for the dump.
// The trainer re-runs a step that went non-finite with an inspector to say where it happened.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "model/probe.h"

namespace fsdp {

/** Where a NaN is planted: phase forward or backward, a block and one of its ops. */
struct Planting {
  std::string phase;
  int layer = 0;
  std::string op;
};

/** Where a value first went non-finite. */
struct FirstNonfinite {
  std::string phase;  // forward | backward
  int layer = 0;      // -1 embedding, n_layers head
  std::string op;
  std::string param;   // backward: the first parameter whose gradient is non-finite (may be empty)
  bool is_nan = true;  // NaN rather than ±Inf
};

struct OpStats {
  std::string phase, kind;  // kind: activation (an op's output), gradient (of an op's input), param_grad
  int layer;
  std::string op, name;
  TensorStats stats;
};

class StepInspector final : public StepProbe {
 public:
  /** plant: null for none. check: find the first non-finite value and collect statistics. */
  StepInspector(Backend& be, const Planting* plant, bool check, int n_layers);

  void forward_output(const OpSite& site, void* out, std::size_t n, DType dtype) override;
  void backward_input(const OpSite& site, void* dout, std::size_t n, DType dtype) override;
  void backward_output(const OpSite& site, const void* din, std::size_t n, DType dtype,
                       std::initializer_list<ParamGradView> params) override;

  const std::optional<FirstNonfinite>& first_forward() const { return forward_; }
  const std::optional<FirstNonfinite>& first_backward() const { return backward_; }
  bool planted() const { return planted_; }
  const std::vector<OpStats>& stats() const { return stats_; }

 private:
  bool plant_here(const char* phase, const OpSite& site) const;
  bool first_is_nan(const void* x, DType dtype, std::size_t n);
  Backend& be_;
  const Planting* plant_;
  bool check_;
  int n_layers_;
  bool planted_ = false;
  std::optional<FirstNonfinite> forward_, backward_;
  std::vector<OpStats> stats_;
};

/** The protocol's name of a layer index: a block's number, "embedding" or "head". */
nlohmann::json layer_name(int layer, int n_layers);

}  // namespace fsdp
