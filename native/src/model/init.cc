#include "model/init.h"

#include <algorithm>
#include <cmath>

#include "runtime/rng.h"

namespace fsdp {

void init_unit_range(const UnitLayout& unit, std::size_t offset, std::size_t count, float* dst, std::uint32_t seed, double init_std, long long n_layers) {
  const std::size_t end = offset + count;
  for (const auto& s : unit.segments) {
    const std::size_t lo = std::max(offset, s.offset), hi = std::min(end, s.offset + s.numel);
    if (lo >= hi) continue;
    float* out = dst + (lo - offset);
    const std::size_t first = lo - s.offset, n = hi - lo;
    switch (s.init) {
      case ParamInit::zeros: std::fill(out, out + n, 0.0f); break;
      case ParamInit::ones: std::fill(out, out + n, 1.0f); break;
      case ParamInit::normal:
      case ParamInit::normal_residual: {
        const double std = s.init == ParamInit::normal ? init_std : init_std / std::sqrt(2.0 * static_cast<double>(n_layers));
        const CounterRng rng(derive_key(seed, name_hash(s.name)));
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std * rng.normal(first + i));
        break;
      }
    }
  }
}

}  // namespace fsdp
