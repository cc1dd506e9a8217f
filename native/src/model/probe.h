// A window into a step as it runs, op by op: the NaN/Inf locator checks every op's output through
// it, the diagnostic dump collects statistics, and debug.inject_nan plants its NaN. Normal steps
// pass no probe and pay nothing.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <string_view>

#include "backend/backend.h"
#include "model/param_layout.h"

namespace fsdp {

/** Where an op runs: layer = block index, or -1 for the embeddings, n_layers for the head. */
struct OpSite {
  int layer;
  std::string_view op;
};

struct ParamGradView {
  const ParamSegment* segment;
  const float* grad;  // the segment's gradient
};

class StepProbe {
 public:
  virtual ~StepProbe() = default;
  // Tensors are in the backend's memory, n elements of `dtype` (activations in the compute dtype).
  /** Forward: an op has written its output (the probe may plant a NaN in it). */
  virtual void forward_output(const OpSite& /*site*/, void* /*out*/, std::size_t /*n*/, DType /*dtype*/) {}
  /** Backward: an op's backward is about to read the gradient of its output (may plant a NaN). */
  virtual void backward_input(const OpSite& /*site*/, void* /*dout*/, std::size_t /*n*/, DType /*dtype*/) {}
  /** Backward: the op's backward has produced `din` for its input (null for the embeddings) and its parameters'
   * gradients. */
  virtual void backward_output(const OpSite& /*site*/, const void* /*din*/, std::size_t /*n*/, DType /*dtype*/,
                               std::initializer_list<ParamGradView> /*params*/) {}
};

}  // namespace fsdp

namespace fsdp {

/** The probe as one layer's code calls it: knows the layer and where its parameters' gradients are. */
class LayerProbe {
 public:
  /** act: the dtype of the activations (the backend's compute dtype); the one-argument forms use it. */
  LayerProbe(StepProbe* probe, int layer, const UnitLayout* unit, const float* unit_grads, DType act = DType::f32)
      : probe_(probe), layer_(layer), unit_(unit), grads_(unit_grads), act_(act) {}

  void forward(std::string_view op, void* out, std::size_t n) const { forward(op, out, n, act_); }
  void forward(std::string_view op, void* out, std::size_t n, DType dtype) const {
    if (probe_) probe_->forward_output({layer_, op}, out, n, dtype);
  }
  void backward_in(std::string_view op, void* dout, std::size_t n) const { backward_in(op, dout, n, act_); }
  void backward_in(std::string_view op, void* dout, std::size_t n, DType dtype) const {
    if (probe_) probe_->backward_input({layer_, op}, dout, n, dtype);
  }
  void backward_out(std::string_view op, const void* din, std::size_t n) const { backward_out(op, din, n, act_); }
  /** Reports the op's input gradient and the gradients of the parameters the op owns. */
  void backward_out(std::string_view op, const void* din, std::size_t n, DType dtype) const {
    if (!probe_) return;
    const ParamSegment* owned[2] = {nullptr, nullptr};
    int k = 0;
    if (unit_) {
      for (const auto& s : unit_->segments)
        if (s.op == op && k < 2) owned[k++] = &s;
    }
    auto view = [&](int i) { return ParamGradView{owned[i], owned[i] ? grads_ + owned[i]->offset : nullptr}; };
    if (k == 2)
      probe_->backward_output({layer_, op}, din, n, dtype, {view(0), view(1)});
    else if (k == 1)
      probe_->backward_output({layer_, op}, din, n, dtype, {view(0)});
    else
      probe_->backward_output({layer_, op}, din, n, dtype, {});
  }
  bool active() const { return probe_ != nullptr; }
  DType act() const { return act_; }

 private:
  StepProbe* probe_;
  int layer_;
  const UnitLayout* unit_;
  const float* grads_;
  DType act_;
};

}  // namespace fsdp
