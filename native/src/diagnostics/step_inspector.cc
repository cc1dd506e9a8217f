#include "diagnostics/step_inspector.h"

#include <cmath>

namespace fsdp {

nlohmann::json layer_name(int layer, int n_layers) {
  if (layer < 0) return "embedding";
  if (layer >= n_layers) return "head";
  return layer;
}

StepInspector::StepInspector(Backend& be, const Planting* plant, bool check, int n_layers)
    : be_(be), plant_(plant), check_(check), n_layers_(n_layers) {}

/** Whether the first non-finite value of x is NaN (else it is ±Inf); x may be in device memory. */
bool StepInspector::first_is_nan(const void* x, DType dtype, std::size_t n) {
  for (float v : be_.to_host_f32(x, dtype, n))
    if (!std::isfinite(v)) return std::isnan(v);
  return true;
}

bool StepInspector::plant_here(const char* phase, const OpSite& site) const {
  return plant_ && plant_->phase == phase && plant_->layer == site.layer && plant_->op == site.op;
}

void StepInspector::forward_output(const OpSite& site, void* out, std::size_t n, DType dtype) {
  if (plant_here("forward", site) && n > 0) {
    be_.set_element(out, dtype, 0, NAN);
    planted_ = true;
  }
  if (!check_) return;
  const TensorStats s = be_.stats(out, dtype, n);
  stats_.push_back({"forward", "activation", site.layer, std::string(site.op), std::string(site.op), s});
  if (s.nonfinite > 0 && !forward_)
    forward_ = FirstNonfinite{"forward", site.layer, std::string(site.op), "", first_is_nan(out, dtype, n)};
}

void StepInspector::backward_input(const OpSite& site, void* dout, std::size_t n, DType dtype) {
  if (plant_here("backward", site) && n > 0) {
    be_.set_element(dout, dtype, 0, NAN);
    planted_ = true;
  }
}

void StepInspector::backward_output(const OpSite& site, const void* din, std::size_t n, DType dtype,
                                    std::initializer_list<ParamGradView> params) {
  if (!check_) return;
  bool bad = false, nan = true;
  if (din && n > 0) {
    const TensorStats s = be_.stats(din, dtype, n);
    stats_.push_back({"backward", "gradient", site.layer, std::string(site.op), std::string(site.op), s});
    if (s.nonfinite > 0) bad = true, nan = first_is_nan(din, dtype, n);
  }
  std::string bad_param;
  for (const auto& p : params) {
    if (!p.segment) continue;
    const TensorStats s = be_.stats(p.grad, p.segment->numel);
    stats_.push_back({"backward", "param_grad", site.layer, std::string(site.op), p.segment->name, s});
    if (s.nonfinite > 0 && bad_param.empty()) {
      bad_param = p.segment->name;
      if (!bad) nan = first_is_nan(p.grad, DType::f32, p.segment->numel);
      bad = true;
    }
  }
  if (bad && !backward_)
    backward_ = FirstNonfinite{"backward", site.layer, std::string(site.op), bad_param, nan};
  else if (backward_ && backward_->param.empty() && !bad_param.empty())
    backward_->param = bad_param;
}

}  // namespace fsdp
