#include "parallel/model_state.h"

#include <cmath>

namespace fsdp {

double ModelState::grad_norm(Backend& be) {
  double sum = 0;
  for (int u = 0; u < unit_count(); ++u) {
    const LocalShard s = owned(u);
    sum += be.sum_squares(s.grads, s.count);
  }
  collectives().all_reduce(&sum, 1, CommType::f64);
  return std::sqrt(sum);
}

}  // namespace fsdp
