#include "addon/smoke_step.h"

#include <chrono>
#include <cmath>

#include "backend/backend.h"
#include "model/model.h"
#include "model/init.h"
#include "parallel/replicated_state.h"
#include "runtime/files.h"
#include "runtime/rng.h"
#include "runtime/threads.h"
#include "memory/activation_choice.h"
#include "backend/backend_options.h"

namespace fsdp {

nlohmann::json smoke_step(const RunConfig& config, long max_tokens) {
  auto backend = make_backend(config.launch.device, backend_options(config));
  const ParamLayout layout = ParamLayout::of(ModelShape::of(config.model));
  const auto t0 = std::chrono::steady_clock::now();
  ReplicatedState state(*backend, layout, false);
  for (int u = 0; u < state.unit_count(); ++u)
    init_unit_range_on(*backend, layout.units[u], 0, layout.units[u].numel, state.params(u), config.training.seed,
                       config.model.init_std, layout.shape.L);
  const double init_ms = 1000.0 * seconds_since(t0);

  const long T = std::min<long>(config.data.seq_len, max_tokens);
  std::vector<std::int32_t> ids(2 * T);
  const CounterRng rng(config.training.seed);
  for (long i = 0; i < 2 * T; ++i)
    ids[i] = static_cast<std::int32_t>(rng.bits(static_cast<std::uint64_t>(i)) %
                                       static_cast<std::uint64_t>(config.model.vocab_size));
  const std::unique_ptr<Model> model =
      make_model(*backend, layout, state, config.model, resolve_activation_policy(config));
  backend->allocator().reset_peak();
  const auto t1 = std::chrono::steady_clock::now();
  const double loss = model->forward_backward({ids.data(), ids.data() + T, 1, T}, 1.0f, 0);
  const double fb_ms = 1000.0 * seconds_since(t1);
  return {{"loss", std::isfinite(loss) ? nlohmann::json(loss) : nlohmann::json(nullptr)},
          {"expected_loss", std::log(static_cast<double>(config.model.vocab_size))},
          {"grad_norm", state.grad_norm(*backend)},
          {"init_ms", init_ms},
          {"forward_backward_ms", fb_ms},
          {"tokens", T},
          {"n_params", layout.total},
          {"mem_peak", backend->allocator().peak().total},
          {"backend", backend->name()},
          {"threads", current_threads()}};
}

}  // namespace fsdp
