#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "model/flops.h"
#include "model/init.h"
#include "model/ops.h"
#include "optim/schedule.h"
#include "parallel/agreement.h"
#include "parallel/process_groups.h"
#include "parallel/strategy.h"
#include "runtime/device_probe.h"
#include "runtime/files.h"
#include "runtime/peak_flops.h"
#include "runtime/rng.h"
#include "runtime/threads.h"
#include "train/backend_options.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

/**
 * The dropout key of a step: a pure function of the seed and the step. Each sequence's masks are
 * drawn at its place in the step's global batch (micro-step, rank, row), so the same step gives the
 * same masks however its batch is split into ranks and micro-batches.
 */
std::uint64_t step_dropout_key(std::uint32_t seed, long step) {
  return derive_key(derive_key(derive_key(seed, 0xd20900d7ULL), static_cast<std::uint64_t>(step)), 0);
}

/** NVML's and the runtime's readings of the GPU, as step events carry them (`gpu`). */
nlohmann::json device_readings_json(const DeviceReadings& r) {
  nlohmann::json j = {{"context_bytes", r.context_bytes}, {"library_workspace_bytes", r.library_workspace_bytes}};
  if (r.util_percent) j["util"] = *r.util_percent;
  if (r.mem_used) j["mem_used"] = *r.mem_used;
  if (r.mem_total) j["mem_total"] = *r.mem_total;
  if (r.temperature_c) j["temp_c"] = *r.temperature_c;
  return j;
}

const char* status_name(RunStatus s) { return s == RunStatus::completed ? "completed" : s == RunStatus::failed ? "failed" : "stopped"; }

nlohmann::json by_category(const MemoryUsage& m) {
  nlohmann::json j;
  for (int k = 0; k < kMemoryCategories; ++k) j[category_name(static_cast<MemoryCategory>(k))] = m.bytes[k];
  j["total"] = m.total;
  return j;
}

/** A MemoryUsage as numbers to gather across ranks (categories, then the total), and back. */
void append_usage(std::vector<double>& out, const MemoryUsage& m) {
  for (auto b : m.bytes) out.push_back(static_cast<double>(b));
  out.push_back(static_cast<double>(m.total));
}
MemoryUsage usage_at(const double* p) {
  MemoryUsage m;
  for (int k = 0; k < kMemoryCategories; ++k) m.bytes[k] = static_cast<std::uint64_t>(p[k]);
  m.total = static_cast<std::uint64_t>(p[kMemoryCategories]);
  return m;
}
constexpr std::size_t kUsageValues = kMemoryCategories + 1;

}  // namespace

struct Trainer::StepOutcome {
  std::optional<RunResult> end;  // set when the run must end after this step
};

Trainer::Trainer(const RunConfig& config, TrainerOptions options)
    : config_(config),
      options_(std::move(options)),
      world_(options_.world ? options_.world : &alone_),
      st_(config.stability.spike_zscore, config.stability.spike_window) {
  use_threads(resolve_threads(config_.launch.threads_per_rank, config_.launch.nproc_per_node));
  backend_ = make_backend(config_.launch.device, backend_options(config_));
  layout_ = ParamLayout::of(ModelShape::of(config_.model));
  plan_ = plan_memory(config_);
  // The run folder is rank 0's: events, run.json and checkpoint manifests come from it alone.
  if (rank0()) {
    fs::create_directories(options_.run_dir);
    log_ = std::make_unique<MetricsLog>((fs::path(options_.run_dir) / "metrics.jsonl").string(), options_.echo_metrics);
    manifest_ = std::make_unique<RunManifest>(options_.run_dir, config_.resolved, config_.world_size());
  } else {
    log_ = std::make_unique<MetricsLog>("", false);
  }
  flops_per_token_ = training_flops_per_token(layout_.shape, config_.data.seq_len);
  scaler_ = LossScaler(backend_->compute_dtype() == DType::f16);
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
  std::string error = set_up(), resumed_from;
  if (error.empty()) {
    try {
      resumed_from = resume_point();
    } catch (const std::exception& e) {
      error = e.what();  // a checkpoint every rank refused together (load_checkpoint agrees)
    }
  }
  if (!error.empty()) {
    RunResult r{RunStatus::failed, st_.step, error};
    log_->log("error", error);
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
    // A stop signal may reach one rank only, and clocks differ: rank 0's clock and any rank's
    // signal decide for all of them, or they would part ways at the next collective.
    double votes[2] = {options_.stop && options_.stop->load() != 0 ? 1.0 : 0.0,
                       rank0() && ck.save_every_minutes > 0 && unix_time() - last_save_time_ >= 60.0 * ck.save_every_minutes ? 1.0 : 0.0};
    world_->all_reduce(votes, 2, CommType::f64);
    if (by_steps || votes[1] > 0) save(st_.step);
    if (rank0() && unix_time() - last_manifest_time_ >= 1.0) {
      update_manifest({{"step", st_.step}});
      last_manifest_time_ = unix_time();
    }
    if (votes[0] > 0) {
      const int signo = options_.stop ? options_.stop->load() : 0;
      result = {RunStatus::stopped, st_.step, signo ? "stopped by signal " + std::to_string(signo) : "stopped by a signal another rank received"};
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

std::string Trainer::set_up() {
  // What each rank does alone comes first, and is agreed on before the collectives start.
  std::string error;
  try {
    if (config_.world_size() != world_->size()) {
      const std::string asked = "launch.nproc_per_node x launch.nnodes is " + std::to_string(config_.world_size());
      throw std::runtime_error(options_.world ? asked + " but the job has " + std::to_string(world_->size()) + " ranks: set launch.nproc_per_node to match (npx fsdp-train --nproc N sets it and starts mpirun)"
                                              : asked + " but this process was not started by mpirun or srun: run npx fsdp-train --nproc " +
                                                    std::to_string(config_.world_size()) + " CONFIG, or mpirun -n " + std::to_string(config_.world_size()) + " fsdp-train-native …");
    }
    train_file_ = std::make_shared<TokenFile>(config_.data.train, static_cast<std::uint32_t>(config_.model.vocab_size));
    if (!config_.data.val.empty()) val_file_ = std::make_shared<TokenFile>(config_.data.val, static_cast<std::uint32_t>(config_.model.vocab_size));
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = first_failure(*world_, error);
  if (!error.empty()) return error;
  // MFU against a true peak (runtime/peak_flops.h): the datasheet's on GPUs, else this machine's
  // sgemm peak, cached per machine; rank 0 finds it while the others wait (measured together they
  // would share the cores).
  if (rank0()) {
    const PeakFlops peak = machine_peak_flops(*backend_, options_.peak_flops);
    peak_flops_ = peak.flops;
    peak_source_ = peak.source;
  }
  world_->broadcast(&peak_flops_, sizeof peak_flops_, 0);
  try {
    // Allocation in the order of MEMORY.md: model state, then the data ring; activations per step.
    state_ = make_model_state(*backend_, layout_, config_, plan_, *world_);
    model_ = std::make_unique<Gpt>(*backend_, layout_, *state_, static_cast<float>(config_.model.dropout), plan_.policy);
    optimizer_ = std::make_unique<AdamW>(*backend_, layout_, config_.training);
    stream_ = std::make_unique<BatchStream>(backend_->batch_allocator(), train_file_, config_.training.batch_size_per_gpu, config_.data.seq_len,
                                            config_.data.shuffle, config_.training.seed, config_.data.prefetch_batches, world_->rank(), world_->size());
  } catch (const std::exception& e) {
    error = e.what();
  }
  return first_failure(*world_, error);
}

std::string Trainer::resume_point() {
  std::string path = options_.resume == "auto" ? newest_usable_checkpoint() : options_.resume;
  if (path.empty()) {
    if (options_.resume == "auto") log_->log("info", "--resume auto: no complete checkpoint in " + checkpoint_dir() + "; starting from step 0");
    initialise_parameters();
    return "";
  }
  load(path);
  log_->log("info", "resumed from " + path + " at step " + std::to_string(st_.step));
  return path;
}

std::string Trainer::newest_usable_checkpoint() {
  // Rank 0 looks, so that every rank loads the same one.
  std::string path;
  if (rank0()) {
    for (const auto& [step, dir] : list_checkpoints(checkpoint_dir())) {
      const std::string problem = verify_checkpoint(dir);
      if (problem.empty()) {
        path = dir;
        break;
      }
      log_->log("warn", "checkpoint " + dir + " is unusable and was not loaded: " + problem);
    }
  }
  return broadcast_string(*world_, path, 0);
}

void Trainer::load(const std::string& path) {
  st_.from_json(load_checkpoint(path, layout_, *state_));
  // Positions count global micro-batches. A run with another global micro-batch (ranks x
  // batch_size_per_gpu) continues at the same sequence when the count divides evenly.
  const std::uint64_t global = static_cast<std::uint64_t>(config_.training.batch_size_per_gpu) * static_cast<std::uint64_t>(world_->size());
  if (st_.global_micro_batch != 0 && st_.global_micro_batch != global) {
    const std::uint64_t sequences = st_.data_position * st_.global_micro_batch;
    if (sequences % global != 0) {
      throw std::runtime_error(path + ": saved after " + std::to_string(sequences) + " sequences in global micro-batches of " + std::to_string(st_.global_micro_batch) +
                               "; this run's global micro-batch (ranks x training.batch_size_per_gpu) is " + std::to_string(global) +
                               ", which does not divide it: choose a batch size whose global micro-batch divides " + std::to_string(sequences));
    }
    log_->log("info", "the checkpoint's global micro-batch is " + std::to_string(st_.global_micro_batch) + " sequences, this run's " + std::to_string(global) +
                          ": continuing at sequence " + std::to_string(sequences));
    st_.data_position = sequences / global;
  }
  st_.global_micro_batch = global;
  stream_->seek(st_.data_position);
}

void Trainer::initialise_parameters() {
  for (int u = 0; u < state_->unit_count(); ++u) {
    const LocalShard sh = state_->local(u);
    init_unit_range_on(*backend_, layout_.units[u], sh.offset, sh.count, sh.params, config_.training.seed, config_.model.init_std, layout_.shape.L);
  }
  state_->publish_params();
  st_.global_micro_batch = static_cast<std::uint64_t>(config_.training.batch_size_per_gpu) * static_cast<std::uint64_t>(world_->size());
}

void Trainer::start(const std::string& resumed_from) {
  write_run_start(resumed_from);
  nlohmann::json fields = {{"status", "running"}, {"step", st_.step}, {"max_steps", config_.training.max_steps}, {"runtime_version", "0.1.0"}};
  if (!resumed_from.empty()) fields["resumed_from"] = resumed_from;
  update_manifest(fields);
  last_manifest_time_ = last_save_time_ = unix_time();
  // A rollback needs somewhere to go back to, even before the first periodic checkpoint.
  std::uint8_t first_save = rank0() && config_.stability.on_nan == "rollback" && st_.step == 0 && list_checkpoints(checkpoint_dir()).empty();
  world_->broadcast(&first_save, 1, 0);
  if (first_save) save(0);
}

void Trainer::update_manifest(const nlohmann::json& fields) {
  if (!manifest_) return;
  std::lock_guard<std::mutex> lock(manifest_mu_);
  manifest_->update(fields);
}

void Trainer::write_run_start(const std::string& resumed_from) {
  // Every rank's host, pid and resident memory (model state and data ring, before any step).
  const std::vector<std::string> hosts = gather_host_names(*world_);
  std::vector<double> mine = {static_cast<double>(::getpid())};
  append_usage(mine, backend_->allocator().live());
  append_usage(mine, backend_->host_allocator().live());
  const std::vector<double> all = gather_values(*world_, mine);
  const std::size_t per_rank = mine.size();
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<WatchedProcess> peers;
  for (int r = 0; r < world_->size(); ++r) {
    const double* p = all.data() + r * per_rank;
    const int pid = static_cast<int>(p[0]);
    ranks.push_back({{"rank", r}, {"host", hosts[r]}, {"device", config_.launch.device}, {"pid", pid},
                     {"mem_resident", by_category(usage_at(p + 1))}, {"mem_resident_host", by_category(usage_at(p + 1 + kUsageValues))}});
    // Rank 0 watches the ranks it can see: those on its own host.
    if (r != 0 && hosts[r] == hosts[0]) peers.push_back({"rank " + std::to_string(r) + " (pid " + std::to_string(pid) + " on " + hosts[r] + ")", pid});
  }
  if (options_.launcher_pid > 0) peers.push_back({"the job's launcher (pid " + std::to_string(options_.launcher_pid) + ", fsdp-train)", options_.launcher_pid});
  if (rank0() && !peer_watch_) {
    watch_peers(peers);
    std::vector<int> pids;
    for (const auto& p : peers) pids.push_back(p.pid);
    if (manifest_) manifest_->add_pids(pids);
  }

  const DeviceProbe probe = probe_devices();
  nlohmann::json e = {{"type", "run_start"},
                      {"config", config_.resolved},
                      {"world", {{"size", world_->size()}, {"ranks", ranks}}},
                      {"memory_plan", plan_.to_json()},
                      {"start_step", st_.step},
                      {"n_params", layout_.total},
                      {"flops_per_token", flops_per_token_},
                      {"peak_flops", peak_flops_},
                      {"peak_source", peak_source_},
                      {"host_memory", probe.cpu.memory_bytes},
                      {"runtime", {{"version", "0.1.0"}, {"backend", backend_->name()}, {"compute_dtype", dtype_name(backend_->compute_dtype())}, {"blas", probe.blas}, {"threads", current_threads()}}}};
  if (manifest_) e["run_id"] = manifest_->run_id();
  if (!resumed_from.empty()) e["resumed_from"] = resumed_from;
  log_->write(e);
}

void Trainer::watch_peers(const std::vector<WatchedProcess>& peers) {
  peer_watch_ = std::make_unique<PeerWatch>(peers, [this](const WatchedProcess& gone) {
    // The main thread may be blocked in a collective that will never complete: end the run from
    // here, in the run folder and on stderr, then leave (mpirun stops the other ranks).
    const std::string reason = gone.what + " is gone: it ended while the job was running, so the job stops; continue from the last complete checkpoint with --resume auto";
    {
      std::lock_guard<std::mutex> lock(manifest_mu_);
      log_->write({{"type", "run_end"}, {"status", "failed"}, {"step", st_.step}, {"reason", reason}});
      manifest_->update({{"status", "failed"}, {"step", st_.step}, {"end_reason", reason}});
    }
    std::fprintf(stderr, "fsdp-train-native: %s\n", reason.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  });
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
  if (!rank0()) return;
  const fs::path dir = fs::path(options_.run_dir) / "diagnostics";
  fs::create_directories(dir);
  write_file_atomically((dir / "injected.json").string(), nlohmann::json(planted_steps_).dump() + "\n");
}

double Trainer::mean_over_ranks(double local) {
  world_->all_reduce(&local, 1, CommType::f64);
  return local / world_->size();
}

double Trainer::run_micro_batches(long step, std::uint64_t first_position, StepProbe* probe, std::vector<std::vector<std::int32_t>>* tokens) {
  const int micro_steps = config_.training.gradient_accumulation_steps;
  const int rank = world_->rank(), ranks = world_->size();
  const long B = config_.training.batch_size_per_gpu, T = config_.data.seq_len;
  double loss = 0;
  for (int micro = 0; micro < micro_steps; ++micro) {
    Batch batch;
    std::vector<std::int32_t> ids;
    if (tokens) {
      // A diagnostic re-run reads the step's batches again, straight from the file.
      ids.resize(2 * B * T);
      BatchStream::read(*train_file_, B, T, config_.data.shuffle, config_.training.seed, first_position + micro, ids.data(), ids.data() + B * T, rank, ranks);
      batch = {ids.data(), ids.data() + B * T, B, T};
      tokens->emplace_back(ids.begin(), ids.begin() + B * T);
    } else {
      batch = stream_->next();
    }
    batch.first_sequence = (static_cast<long>(micro) * ranks + rank) * B;
    // Gradients are communicated once, after the last micro-step's backward (no_sync before it).
    state_->set_gradient_sync(micro == micro_steps - 1);
    // Each micro-batch adds the gradient of loss / (micro_steps x ranks): summed over the micro-steps
    // and reduced over the ranks, the step's gradient is that of the mean over the global batch.
    // Under float16 the gradients also carry the loss scale until the optimizer divides it out.
    const float scale = scaler_.enabled() ? static_cast<float>(scaler_.scale() / (static_cast<double>(micro_steps) * ranks))
                                          : 1.0f / (static_cast<float>(micro_steps) * static_cast<float>(ranks));
    loss += model_->forward_backward(batch, scale, step_dropout_key(config_.training.seed, step), probe);
  }
  return mean_over_ranks(loss / micro_steps);
}

Trainer::StepOutcome Trainer::train_step(long step) {
  const auto t0 = std::chrono::steady_clock::now();
  step_cpu_start_ = process_cpu_seconds();
  backend_->allocator().reset_peak();
  backend_->host_allocator().reset_peak();
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
  const double grad_norm = state_->grad_norm(*backend_) / scaler_.scale();

  // The loss and the norm are the same on every rank: the branches below are taken together.
  StepOutcome out;
  if (scaler_.enabled() && std::isfinite(loss) && !std::isfinite(grad_norm)) {
    // float16 overflow, not a fault of the model: skip the update with a smaller scale.
    scaler_.update(false);
    state_->zero_grads();
    st_.step = step;
    write_step(step, loss, lr, grad_norm, seconds_since(t0), true);
    return out;
  }
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
    const float clip = scaler_.enabled() ? static_cast<float>((max_norm > 0 && grad_norm > max_norm ? max_norm / (grad_norm + 1e-6) : 1.0) / scaler_.scale())
                       : max_norm > 0 && grad_norm > max_norm ? static_cast<float>(max_norm / (grad_norm + 1e-6)) : 1.0f;
    UpdatePoison poison;
    const auto& inj = config_.debug.inject_nan;
    const bool poisoning = inj.enabled && inj.phase == "optimizer" && inj.step == step && !(inj.once && planted_steps_.count(step));
    if (poisoning) poison = {layout_.block_unit(inj.layer), (inj.op.empty() ? std::string(ops::kDefaultOptimizer) : inj.op) + ".weight"};
    // The norm of the gradients as stored: under float16 they still carry the loss scale.
    const auto bad = optimizer_->step(*state_, st_.adam_t + 1, lr, clip, grad_norm * scaler_.scale(), poisoning ? &poison : nullptr);
    if (poisoning) remember_planted(step);
    if (bad) {
      out.end = handle_bad_update(step, {loss, lr, grad_norm, t0}, *bad);
      return out;
    }
    ++st_.adam_t;
    scaler_.update(true);
    st_.loss_spikes.add(loss);
    st_.grad_norm_spikes.add(grad_norm);
  }
  st_.step = step;
  write_step(step, loss, lr, grad_norm, seconds_since(t0), skip);
  return out;
}

void Trainer::write_step(long step, double loss, double lr, double grad_norm, double seconds, bool skipped) {
  if (!skipped && step % config_.logging.every_n_steps != 0 && step != config_.training.max_steps) return;
  const int W = world_->size();
  // Every rank's peaks and time, to rank 0, which writes the run's event and one per rank.
  std::vector<double> mine;
  append_usage(mine, backend_->allocator().peak());
  append_usage(mine, backend_->host_allocator().peak());
  mine.push_back(seconds);
  mine.push_back(process_cpu_seconds() - step_cpu_start_);
  const std::vector<double> all = W > 1 ? gather_values(*world_, mine) : mine;
  if (!rank0()) return;
  const bool offload = plan_.host.total > 0;
  std::optional<nlohmann::json> gpu;
  if (const auto r = backend_->readings()) gpu = device_readings_json(*r);  // this rank's GPU
  const double tokens = static_cast<double>(config_.training.batch_size_per_gpu) * config_.data.seq_len * config_.training.gradient_accumulation_steps;
  // flops_per_s and mfu are one rank's; tokens_per_s counts the tokens of `ranks` ranks.
  auto event = [&](const MemoryUsage& device, const MemoryUsage& host, double secs, double cpu_secs, int ranks) {
    const double flops = tokens * flops_per_token_ / secs;
    nlohmann::json e = {{"type", "step"},
                        {"step", step},
                        {"loss", finite_or_null(loss)},
                        {"lr", lr},
                        {"grad_norm", finite_or_null(grad_norm)},
                        {"tokens_per_s", tokens * ranks / secs},
                        {"step_ms", 1000.0 * secs},
                        {"cpu_ms", 1000.0 * cpu_secs},
                        {"mem_peak", device.total},
                        {"mem_peak_by_category", by_category(device)},
                        {"flops_per_s", flops},
                        {"mfu", peak_flops_ > 0 ? flops / peak_flops_ : 0.0}};
    if (offload) e["mem_peak_host_by_category"] = by_category(host);
    if (skipped) e["skipped"] = true;
    if (scaler_.enabled()) e["loss_scale"] = scaler_.scale();
    if (gpu) e["gpu"] = *gpu;
    return e;
  };
  const std::size_t per_rank = mine.size();
  if (W == 1) {
    log_->write(event(usage_at(all.data()), usage_at(all.data() + kUsageValues), seconds, all[2 * kUsageValues + 1], 1));
    return;
  }
  // The run's event: the global batch's throughput, and the highest peak of any rank.
  MemoryUsage device_max, host_max;
  for (int r = 0; r < W; ++r) {
    const MemoryUsage d = usage_at(all.data() + r * per_rank), h = usage_at(all.data() + r * per_rank + kUsageValues);
    for (int k = 0; k < kMemoryCategories; ++k) device_max.bytes[k] = std::max(device_max.bytes[k], d.bytes[k]), host_max.bytes[k] = std::max(host_max.bytes[k], h.bytes[k]);
    device_max.total = std::max(device_max.total, d.total);
    host_max.total = std::max(host_max.total, h.total);
  }
  log_->write(event(device_max, host_max, seconds, all[2 * kUsageValues + 1], W));
  for (int r = 0; r < W; ++r) {
    const double* p = all.data() + r * per_rank;
    nlohmann::json e = event(usage_at(p), usage_at(p + kUsageValues), p[2 * kUsageValues], p[2 * kUsageValues + 1], 1);
    e["rank"] = r;
    log_->write(e);
  }
}

void Trainer::evaluate(long step) {
  if (!val_file_) return;
  const long B = config_.training.batch_size_per_gpu, T = config_.data.seq_len;
  Buffer ids = backend_->batch_allocator().allocate(MemoryCategory::other, 8 * static_cast<std::size_t>(B * T));
  double total = 0;
  const int batches = config_.logging.eval_batches;
  for (int k = 0; k < batches; ++k) {
    // The first eval_batches global batches of the validation file, in file order: the same every time.
    BatchStream::read(*val_file_, B, T, false, 0, static_cast<std::uint64_t>(k), ids.i32(), ids.i32() + B * T, world_->rank(), world_->size());
    total += model_->evaluate({ids.i32(), ids.i32() + B * T, B, T});
  }
  log_->write({{"type", "eval"}, {"step", step}, {"val_loss", finite_or_null(mean_over_ranks(total / batches))}});
}

void Trainer::save(long step) {
  const auto t0 = std::chrono::steady_clock::now();
  st_.step = step;
  const SavedCheckpoint c = save_checkpoint(checkpoint_dir(), step, st_.to_json(), layout_, *state_);
  last_save_time_ = unix_time();
  last_saved_step_ = step;
  if (!rank0()) return;
  prune_checkpoints(checkpoint_dir(), config_.checkpointing.keep_last_n);
  log_->write({{"type", "checkpoint"}, {"step", step}, {"path", fs::relative(c.path, options_.run_dir).string()}, {"bytes", c.bytes},
               {"save_ms", 1000.0 * seconds_since(t0)}});
}

void Trainer::finish(const RunResult& r) {
  nlohmann::json e = {{"type", "run_end"}, {"status", status_name(r.status)}, {"step", r.step}};
  if (!r.reason.empty()) e["reason"] = r.reason;
  nlohmann::json fields = {{"status", status_name(r.status)}, {"step", r.step}};
  if (!r.reason.empty()) fields["end_reason"] = r.reason;
  {
    std::lock_guard<std::mutex> lock(manifest_mu_);
    log_->write(e);
    if (manifest_) manifest_->update(fields);
  }
  // Ranks now leave one by one: that is no longer a rank dying. No rank leaves before rank 0 has
  // written the end (mpirun stops the others as soon as one exits with a failure code).
  if (peer_watch_) peer_watch_->stop();
  world_->barrier();
}

}  // namespace fsdp
