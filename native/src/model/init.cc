#include "model/init.h"

#include <algorithm>
#include <cmath>

#include "backend/backend.h"
#include "runtime/rng.h"

namespace fsdp {

void init_unit_range(const UnitLayout& unit, std::size_t offset, std::size_t count, float* dst, std::uint32_t seed,
                     double init_std, long long n_layers) {
  const std::size_t end = offset + count;
  for (const auto& s : unit.segments) {
    const std::size_t lo = std::max(offset, s.offset), hi = std::min(end, s.offset + s.numel);
    if (lo >= hi) continue;
    float* out = dst + (lo - offset);
    const std::size_t first = lo - s.offset, n = hi - lo;
    switch (s.init) {
      case ParamInit::zeros:
        std::fill(out, out + n, 0.0f);
        break;
      case ParamInit::ones:
        std::fill(out, out + n, 1.0f);
        break;
      case ParamInit::normal:
      case ParamInit::normal_residual: {
        const double std =
            s.init == ParamInit::normal ? init_std : init_std / std::sqrt(2.0 * static_cast<double>(n_layers));
        const CounterRng rng(derive_key(seed, name_hash(s.name)));
        // Element k of the tensor is normal(k): walk the pairs covering [first, first + n).
        const std::size_t pairs_begin = first / 2, pairs_end = (first + n + 1) / 2;
#pragma omp parallel for schedule(static)
        for (std::size_t p = pairs_begin; p < pairs_end; ++p) {
          double even, odd;
          rng.normal_pair(p, &even, &odd);
          if (2 * p >= first && 2 * p < first + n) out[2 * p - first] = static_cast<float>(std * even);
          if (2 * p + 1 >= first && 2 * p + 1 < first + n) out[2 * p + 1 - first] = static_cast<float>(std * odd);
        }
        break;
      }
    }
  }
}

}  // namespace fsdp

namespace fsdp {

void init_unit_range_on(Backend& be, const UnitLayout& unit, std::size_t offset, std::size_t count, float* dst,
                        std::uint32_t seed, double init_std, long long n_layers) {
  if (be.host_memory()) return init_unit_range(unit, offset, count, dst, seed, init_std, n_layers);
  std::vector<float> host(count);
  init_unit_range(unit, offset, count, host.data(), seed, init_std, n_layers);
  be.upload(dst, host.data(), sizeof(float) * count);
}

}  // namespace fsdp
