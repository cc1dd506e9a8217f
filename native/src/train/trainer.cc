#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "model/flops.h"
#include "model/init.h"
#include "model/ops.h"
#include "optim/schedule.h"
#include "parallel/replicated_state.h"
#include "runtime/device_probe.h"
#include "runtime/files.h"
#include "runtime/peak_flops.h"
#include "runtime/rng.h"
#include "runtime/threads.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

/** The dropout key of a micro-batch: a pure function of the seed, the step and the micro-step. */
std::uint64_t micro_batch_key(std::uint32_t seed, long step, int micro) {
  return derive_key(derive_key(derive_key(seed, 0xd20900d7ULL), static_cast<std::uint64_t>(step)), static_cast<std::uint64_t>(micro));
}

const char* status_name(RunStatus s) { return s == RunStatus::completed ? "completed" : s == RunStatus::failed ? "failed" : "stopped"; }

}  // namespace

struct Trainer::StepOutcome {
  std::optional<RunResult> end;  // set when the run must end after this step
};

Trainer::Trainer(const RunConfig& config, TrainerOptions options)
    : config_(config), options_(std::move(options)), st_(config.stability.spike_zscore, config.stability.spike_window) {
  use_threads(resolve_threads(config_.launch.threads_per_rank, config_.launch.nproc_per_node));
  backend_ = make_backend(config_.launch.device);
  layout_ = ParamLayout::of(ModelShape::of(config_.model));
  plan_ = plan_memory(config_);
  fs::create_directories(options_.run_dir);
  log_ = std::make_unique<MetricsLog>((fs::path(options_.run_dir) / "metrics.jsonl").string(), options_.echo_metrics);
  manifest_ = std::make_unique<RunManifest>(options_.run_dir, config_.resolved, config_.world_size());
  flops_per_token_ = training_flops_per_token(layout_.shape, config_.data.seq_len);
  std::ifstream planted((fs::path(options_.run_dir) / "diagnostics" / "injected.json").string());
  if (planted) {
    const nlohmann::json steps = nlohmann::json::parse(planted, nullptr, false);
    if (steps.is_array())
      for (const auto& s : steps)
        if (s.is_number_integer()) planted_steps_.insert(s.get<long>());
  }
}

Trainer::~Trainer() = default;

std::string Trainer::checkpoint_dir() const {
  const fs::path dir(config_.checkpointing.dir);
  return dir.is_absolute() ? dir.string() : (fs::path(options_.run_dir) / dir).string();
}

RunResult Trainer::run() {
  std::string resumed_from;
  try {
    peak_flops_ = options_.peak_flops > 0 ? options_.peak_flops : measure_sgemm(*backend_).flops;
    train_file_ = std::make_shared<TokenFile>(config_.data.train);
    if (!config_.data.val.empty()) val_file_ = std::make_shared<TokenFile>(config_.data.val);
    // Allocation in the order of MEMORY.md: model state, then the data ring; activations per step.
    state_ = std::make_unique<ReplicatedState>(*backend_, layout_);
    model_ = std::make_unique<Gpt>(*backend_, layout_, *state_, static_cast<float>(config_.model.dropout), plan_.policy);
    optimizer_ = std::make_unique<AdamW>(*backend_, layout_, config_.training);
    stream_ = std::make_unique<BatchStream>(backend_->allocator(), train_file_, config_.training.batch_size_per_gpu, config_.data.seq_len,
                                            config_.data.shuffle, config_.training.seed, config_.data.prefetch_batches);
    resumed_from = resume_point();
  } catch (const std::exception& e) {
    RunResult r{RunStatus::failed, st_.step, e.what()};
    log_->log("error", e.what());
    finish(r);
    return r;
  }
  start(resumed_from);

  RunResult result{RunStatus::completed, st_.step, ""};
  for (long step = st_.step + 1; step <= config_.training.max_steps; step = st_.step + 1) {
    StepOutcome out = train_step(step);
    if (out.end) {
      result = *out.end;
      break;
    }
    if (config_.logging.eval_every_n_steps > 0 && st_.step % config_.logging.eval_every_n_steps == 0) evaluate(st_.step);
    const auto& ck = config_.checkpointing;
    const bool by_steps = ck.save_every_n_steps > 0 && st_.step % ck.save_every_n_steps == 0;
    const bool by_time = ck.save_every_minutes > 0 && unix_time() - last_save_time_ >= 60.0 * ck.save_every_minutes;
    if (by_steps || by_time) save(st_.step);
    if (unix_time() - last_manifest_time_ >= 1.0) {
      manifest_->update({{"step", st_.step}});
      last_manifest_time_ = unix_time();
    }
    if (options_.stop && options_.stop->load() != 0) {
      result = {RunStatus::stopped, st_.step, std::string("stopped by signal ") + std::to_string(options_.stop->load())};
      break;
    }
  }
  result.step = st_.step;
  if (result.status == RunStatus::completed) {
    // logging.eval_every_n_steps 0 evaluates only at the end; otherwise the end adds one if due.
    if (val_file_ && (config_.logging.eval_every_n_steps == 0 || st_.step % config_.logging.eval_every_n_steps != 0)) evaluate(st_.step);
  }
  const auto& ck = config_.checkpointing;
  const bool checkpointing = ck.save_final || ck.save_every_n_steps > 0 || ck.save_every_minutes > 0;
  if (result.status != RunStatus::failed && checkpointing && last_saved_step_ != st_.step) save(st_.step);
  finish(result);
  return result;
}

std::string Trainer::resume_point() {
  if (options_.resume.empty()) {
    initialise_parameters();
    return "";
  }
  std::string path;
  if (options_.resume == "auto") {
    for (const auto& [step, dir] : list_checkpoints(checkpoint_dir())) {
      const std::string problem = verify_checkpoint(dir);
      if (problem.empty()) {
        path = dir;
        break;
      }
      log_->log("warn", "checkpoint " + dir + " is unusable and was not loaded: " + problem);
    }
    if (path.empty()) {
      log_->log("info", "--resume auto: no complete checkpoint in " + checkpoint_dir() + "; starting from step 0");
      initialise_parameters();
      return "";
    }
  } else {
    path = options_.resume;
  }
  st_.from_json(load_checkpoint(path, layout_, *state_));
  stream_->seek(st_.data_position);
  log_->log("info", "resumed from " + path + " at step " + std::to_string(st_.step));
  return path;
}

void Trainer::initialise_parameters() {
  for (int u = 0; u < state_->unit_count(); ++u) {
    const LocalShard sh = state_->local(u);
    init_unit_range(layout_.units[u], sh.offset, sh.count, sh.params, config_.training.seed, config_.model.init_std, layout_.shape.L);
  }
}

void Trainer::start(const std::string& resumed_from) {
  write_run_start(resumed_from);
  nlohmann::json fields = {{"status", "running"}, {"step", st_.step}, {"max_steps", config_.training.max_steps}, {"runtime_version", "0.1.0"}};
  if (!resumed_from.empty()) fields["resumed_from"] = resumed_from;
  manifest_->update(fields);
  last_manifest_time_ = last_save_time_ = unix_time();
  // A rollback needs somewhere to go back to, even before the first periodic checkpoint.
  if (config_.stability.on_nan == "rollback" && st_.step == 0 && list_checkpoints(checkpoint_dir()).empty()) save(0);
}

void Trainer::write_run_start(const std::string& resumed_from) {
  const DeviceProbe probe = probe_devices();
  nlohmann::json e = {{"type", "run_start"},
                      {"run_id", manifest_->run_id()},
                      {"config", config_.resolved},
                      {"world", {{"size", 1}, {"ranks", {{{"rank", 0}, {"host", host_name()}, {"device", config_.launch.device}, {"pid", ::getpid()}}}}}},
                      {"memory_plan", plan_.to_json()},
                      {"start_step", st_.step},
                      {"n_params", layout_.total},
                      {"flops_per_token", flops_per_token_},
                      {"peak_flops", peak_flops_},
                      {"runtime", {{"version", "0.1.0"}, {"backend", backend_->name()}, {"blas", probe.blas}, {"threads", current_threads()}}}};
  if (!resumed_from.empty()) e["resumed_from"] = resumed_from;
  log_->write(e);
}

std::optional<Planting> Trainer::planting_for(long step) const {
  const auto& inj = config_.debug.inject_nan;
  if (!inj.enabled || inj.step != step || inj.phase == "optimizer") return std::nullopt;
  if (inj.once && planted_steps_.count(step)) return std::nullopt;
  const std::string op = !inj.op.empty() ? inj.op : std::string(inj.phase == "forward" ? ops::kDefaultForward : ops::kDefaultBackward);
  return Planting{inj.phase, inj.layer, op};
}

void Trainer::remember_planted(long step) {
  // Kept in the run folder, not in checkpoints: a resumed or rolled-back run must not plant again.
  planted_steps_.insert(step);
  const fs::path dir = fs::path(options_.run_dir) / "diagnostics";
  fs::create_directories(dir);
  write_file_atomically((dir / "injected.json").string(), nlohmann::json(planted_steps_).dump() + "\n");
}

double Trainer::run_micro_batches(long step, std::uint64_t first_position, StepProbe* probe, std::vector<std::vector<std::int32_t>>* tokens) {
  const int micro_steps = config_.training.gradient_accumulation_steps;
  const long B = config_.training.batch_size_per_gpu, T = config_.data.seq_len;
  double loss = 0;
  for (int micro = 0; micro < micro_steps; ++micro) {
    Batch batch;
    std::vector<std::int32_t> ids;
    if (tokens) {
      // A diagnostic re-run reads the step's batches again, straight from the file.
      ids.resize(2 * B * T);
      BatchStream::read(*train_file_, B, T, config_.data.shuffle, config_.training.seed, first_position + micro, ids.data(), ids.data() + B * T);
      batch = {ids.data(), ids.data() + B * T, B, T};
      tokens->emplace_back(ids.begin(), ids.begin() + B * T);
    } else {
      batch = stream_->next();
    }
    // Each micro-batch adds the gradient of loss / micro_steps: the step's gradient is the mean's.
    loss += model_->forward_backward(batch, 1.0f / static_cast<float>(micro_steps), micro_batch_key(config_.training.seed, step, micro), probe);
  }
  return loss / micro_steps;
}

Trainer::StepOutcome Trainer::train_step(long step) {
  const auto t0 = std::chrono::steady_clock::now();
  step_cpu_start_ = process_cpu_seconds();
  Allocator& alloc = backend_->allocator();
  alloc.reset_peak();
  if (st_.skip_batches_at.count(step)) {
    // A rollback found this step's batches poisonous: take the next ones instead.
    st_.data_position += static_cast<std::uint64_t>(config_.training.gradient_accumulation_steps);
    stream_->seek(st_.data_position);
  }
  const std::uint64_t first_position = st_.data_position;
  const double lr = scheduled_lr(config_.training, step) * st_.lr_factor;

  state_->zero_grads();
  const std::optional<Planting> plant = planting_for(step);
  const bool checking = config_.debug.check_numerics;
  std::unique_ptr<StepInspector> inspector;
  if (plant || checking) inspector = std::make_unique<StepInspector>(*backend_, plant ? &*plant : nullptr, checking, static_cast<int>(layout_.shape.L));
  const double loss = run_micro_batches(step, first_position, inspector.get(), nullptr);
  st_.data_position = stream_->position();
  if (inspector && inspector->planted()) remember_planted(step);
  const double grad_norm = state_->grad_norm(*backend_);

  StepOutcome out;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
    out.end = handle_nonfinite(step, {loss, lr, grad_norm, t0}, first_position, plant ? &*plant : nullptr);
    return out;
  }

  // Spikes are judged against the window before this step's values join it.
  bool skip = false;
  const auto& stab = config_.stability;
  for (auto [metric, value, detector] : {std::tuple<const char*, double, SpikeDetector*>{"loss", loss, &st_.loss_spikes},
                                         {"grad_norm", grad_norm, &st_.grad_norm_spikes}}) {
    if (const auto z = detector->check(value)) {
      const bool skipping = stab.on_spike == "skip";
      skip = skip || skipping;
      log_->write({{"type", "anomaly"}, {"step", step}, {"kind", "spike"}, {"where", {{"phase", "loss"}}}, {"action", skipping ? "skip" : "report"},
                   {"value", value}, {"zscore", *z}, {"metric", metric}, {"dump", nullptr}});
    }
  }

  if (!skip) {
    const double max_norm = config_.training.max_grad_norm;
    const float clip = max_norm > 0 && grad_norm > max_norm ? static_cast<float>(max_norm / (grad_norm + 1e-6)) : 1.0f;
    UpdatePoison poison;
    const auto& inj = config_.debug.inject_nan;
    const bool poisoning = inj.enabled && inj.phase == "optimizer" && inj.step == step && !(inj.once && planted_steps_.count(step));
    if (poisoning) poison = {layout_.block_unit(inj.layer), (inj.op.empty() ? std::string(ops::kDefaultOptimizer) : inj.op) + ".weight"};
    const auto bad = optimizer_->step(*state_, st_.adam_t + 1, lr, clip, grad_norm, poisoning ? &poison : nullptr);
    if (poisoning) remember_planted(step);
    if (bad) {
      out.end = handle_bad_update(step, {loss, lr, grad_norm, t0}, *bad);
      return out;
    }
    ++st_.adam_t;
    st_.loss_spikes.add(loss);
    st_.grad_norm_spikes.add(grad_norm);
  }
  st_.step = step;
  write_step(step, loss, lr, grad_norm, seconds_since(t0), skip);
  return out;
}

void Trainer::write_step(long step, double loss, double lr, double grad_norm, double seconds, bool skipped) {
  if (!skipped && step % config_.logging.every_n_steps != 0 && step != config_.training.max_steps) return;
  const MemoryUsage peak = backend_->allocator().peak();
  nlohmann::json by_category;
  for (int k = 0; k < kMemoryCategories; ++k) by_category[category_name(static_cast<MemoryCategory>(k))] = peak.bytes[k];
  by_category["total"] = peak.total;
  const double tokens = static_cast<double>(config_.training.batch_size_per_gpu) * config_.data.seq_len * config_.training.gradient_accumulation_steps;
  const double flops = tokens * flops_per_token_ / seconds;
  nlohmann::json e = {{"type", "step"},
                      {"step", step},
                      {"loss", finite_or_null(loss)},
                      {"lr", lr},
                      {"grad_norm", finite_or_null(grad_norm)},
                      {"tokens_per_s", tokens / seconds},
                      {"step_ms", 1000.0 * seconds},
                      {"cpu_ms", 1000.0 * (process_cpu_seconds() - step_cpu_start_)},
                      {"mem_peak", peak.total},
                      {"mem_peak_by_category", by_category},
                      {"flops_per_s", flops},
                      {"mfu", peak_flops_ > 0 ? flops / peak_flops_ : 0.0}};
  if (skipped) e["skipped"] = true;
  log_->write(e);
}

void Trainer::evaluate(long step) {
  if (!val_file_) return;
  const long B = config_.training.batch_size_per_gpu, T = config_.data.seq_len;
  Buffer ids = backend_->allocator().allocate(MemoryCategory::other, 8 * static_cast<std::size_t>(B * T));
  double total = 0;
  const int batches = config_.logging.eval_batches;
  for (int k = 0; k < batches; ++k) {
    // The first eval_batches batches of the validation file, in file order: the same every time.
    BatchStream::read(*val_file_, B, T, false, 0, static_cast<std::uint64_t>(k), ids.i32(), ids.i32() + B * T);
    total += model_->evaluate({ids.i32(), ids.i32() + B * T, B, T});
  }
  log_->write({{"type", "eval"}, {"step", step}, {"val_loss", finite_or_null(total / batches)}});
}

void Trainer::save(long step) {
  const auto t0 = std::chrono::steady_clock::now();
  st_.step = step;
  const SavedCheckpoint c = save_checkpoint(checkpoint_dir(), step, st_.to_json(), layout_, *state_);
  prune_checkpoints(checkpoint_dir(), config_.checkpointing.keep_last_n);
  last_save_time_ = unix_time();
  last_saved_step_ = step;
  log_->write({{"type", "checkpoint"}, {"step", step}, {"path", fs::relative(c.path, options_.run_dir).string()}, {"bytes", c.bytes},
               {"save_ms", 1000.0 * seconds_since(t0)}});
}

void Trainer::finish(const RunResult& r) {
  nlohmann::json e = {{"type", "run_end"}, {"status", status_name(r.status)}, {"step", r.step}};
  if (!r.reason.empty()) e["reason"] = r.reason;
  log_->write(e);
  nlohmann::json fields = {{"status", status_name(r.status)}, {"step", r.step}};
  if (!r.reason.empty()) fields["end_reason"] = r.reason;
  manifest_->update(fields);
}

}  // namespace fsdp
