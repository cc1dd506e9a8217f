// Initial parameter values, GPT-2 style: weights ~ N(0, init_std), residual output projections
// (attn.proj, mlp.fc2) ~ N(0, init_std / sqrt(2 L)), biases 0, LayerNorm weights 1. Each value is
// a pure function of (seed, parameter name, index), so any rank can initialise any slice of a
// unit — a shard — and get the values a single process would.
#pragma once
#include <cstddef>
#include <cstdint>

#include "model/param_layout.h"

namespace fsdp {

/** Writes elements [offset, offset + count) of the unit's flat parameter buffer to dst. */
void init_unit_range(const UnitLayout& unit, std::size_t offset, std::size_t count, float* dst, std::uint32_t seed,
                     double init_std, long long n_layers);

}  // namespace fsdp

namespace fsdp {

class Backend;

/** init_unit_range into the backend's memory: through a host copy when that memory is a GPU's. */
void init_unit_range_on(Backend& be, const UnitLayout& unit, std::size_t offset, std::size_t count, float* dst,
                        std::uint32_t seed, double init_std, long long n_layers);

}  // namespace fsdp
