// Dynamic loss scaling for float16 compute (as PyTorch's GradScaler): the loss, and so every
// gradient, is multiplied by `scale` so small gradients survive float16; the float32 gradients are
// divided by it again before clipping and the update. A step whose gradients overflow is skipped
// and the scale halved; after `window` good steps in a row it doubles. bfloat16 and float32 have
// float32's range and need none (scale 1).
#pragma once

namespace fsdp {

class LossScaler {
 public:
  explicit LossScaler(bool enabled, double initial = 65536.0, int window = 2000)
      : enabled_(enabled), scale_(enabled ? initial : 1.0), window_(window) {}

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }

  /** After a step's backward: whether its gradients were finite. Returns true when the update may be applied. */
  bool update(bool finite) {
    if (!enabled_) return finite;
    if (!finite) {
      scale_ *= 0.5;
      good_ = 0;
      return false;
    }
    if (++good_ >= window_) {
      scale_ *= 2.0;
      good_ = 0;
    }
    return true;
  }

 private:
  bool enabled_;
  double scale_;
  int window_;
  int good_ = 0;
};

}  // namespace fsdp
