#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "model/flops.h"
#include "model/init.h"
#include "optim/schedule.h"
#include "parallel/agreement.h"
#include "parallel/strategy.h"
#include "runtime/files.h"
#include "backend/peak_flops.h"
#include "runtime/blas_kernels.h"
#include "runtime/rng.h"
#include "runtime/threads.h"
#include "backend/backend_options.h"
#include "backend/device_probe.h"
#include "memory/memory_check.h"
#include "train/run_failure.h"
#include "train/step_end_vote.h"

namespace fsdp {

namespace {

/**
 * The dropout key of a step: a pure function of the seed and the step. Each sequence's masks are
 * drawn at its place in the step's global batch (micro-step, rank, row), so the same step gives the
 * same masks however its batch is split into ranks and micro-batches.
 */
std::uint64_t step_dropout_key(std::uint32_t seed, long step) {
  return derive_key(derive_key(derive_key(seed, 0xd20900d7ULL), static_cast<std::uint64_t>(step)), 0);
}

}  // namespace

struct Trainer::StepOutcome {
  std::optional<RunResult> end;  // set when the run must end after this step
};

Trainer::Trainer(const RunConfig& config, TrainerOptions options)
    : config_(config),
      options_(std::move(options)),
      world_(options_.world ? options_.world : &alone_),
      st_(config.stability.spike_zscore, config.stability.spike_window) {
  if (world_->size() > 1) {
    // Every collective of the job is timed, for the watchdog (collective_watchdog.h).
    watched_world_ = std::make_unique<WatchedCollectives>(*world_, clock_);
    world_ = watched_world_.get();
  }
  use_threads(resolve_threads(config_.launch.threads_per_rank, config_.launch.nproc_per_node));
  backend_ = make_backend(config_.launch.device, backend_options(config_));
  layout_ = ParamLayout::of(ModelShape::of(config_.model));
  plan_ = plan_memory(config_);
  // The run folder is rank 0's: events and checkpoint manifests come from it alone (run.json is its supervisor's).
  folder_ = std::make_unique<RunFolder>(options_.run_dir, config_, rank0(), options_.echo_metrics);
  events_ = std::make_unique<StepEvents>(*folder_, *world_, *backend_, config_, plan_,
                                         training_flops_per_token(layout_.shape, config_.data.seq_len));
  planting_ =
      std::make_unique<NanPlanting>(config_.debug.inject_nan, options_.run_dir, rank0(), config_.model.architecture);
  scaler_ = LossScaler(backend_->compute_dtype() == DType::f16);
}

Trainer::~Trainer() = default;

RunResult Trainer::run() {
  std::string error = set_up(), resumed_from;
  if (error.empty()) {
    try {
      resumed_from = checkpoints_->resume_point(options_.resume);
      if (!resumed_from.empty()) load(resumed_from);
    } catch (const std::exception& e) {
      // --resume refused (nothing to continue from, nothing usable, a checkpoint every rank refused
      // together): nothing was started, so the run keeps the end it had — no run_end, run.json
      // untouched (it turned "completed, step 30" into "failed, step 0"); the reason is logged and said.
      const RunResult r{RunStatus::failed, st_.step, e.what()};
      folder_->log("error", r.reason);
      return r;
    }
    if (resumed_from.empty())
      initialise_parameters();
    else
      folder_->log("info", "resumed from " + resumed_from + " at step " + std::to_string(st_.step));
  }
  if (!error.empty()) {
    RunResult r{RunStatus::failed, st_.step, error};
    folder_->log("error", error);
    finish(r);
    return r;
  }
  try {
    return run_steps(resumed_from);
  } catch (const std::exception& e) {
    // A fault the loop did not expect (a full disk under a save or an event, a bad token id):
    // the run still ends in run.json and metrics.jsonl, as failed, with the fault's words.
    RunResult r{RunStatus::failed, st_.step, failure_reason(e)};
    r.alone = world_->size() > 1 && dynamic_cast<const JobFailure*>(&e) == nullptr;
    finish(r, /*together=*/false);
    return r;
  }
}

RunResult Trainer::run_steps(const std::string& resumed_from) {
  start(resumed_from);

  RunResult result{RunStatus::completed, st_.step, ""};
  for (long step = st_.step + 1; step <= config_.training.max_steps; step = st_.step + 1) {
    const auto step_start = std::chrono::steady_clock::now();
    StepOutcome out = train_step(step);
    if (watchdog_) watchdog_->step_took(seconds_since(step_start));
    completed_step_.store(st_.step);
    if (watch_) watch_->at_step(st_.step);
    if (out.end) {
      result = *out.end;
      break;
    }
    if (config_.logging.eval_every_n_steps > 0 && st_.step % config_.logging.eval_every_n_steps == 0)
      evaluate(st_.step);
    const StepEndVote vote = vote_at_step_end(*world_, options_.stop, checkpoints_->clock_due());
    if (checkpoints_->steps_due(st_.step) || vote.save) save(st_.step);
    if (vote.stop) {
      result = {RunStatus::stopped, st_.step,
                vote.signal ? "stopped by signal " + std::to_string(vote.signal)
                            : "stopped by a signal another rank received"};
      break;
    }
  }
  result.step = st_.step;
  if (result.status == RunStatus::completed) {
    // logging.eval_every_n_steps 0 evaluates only at the end; otherwise the end adds one if due.
    if (val_file_ && (config_.logging.eval_every_n_steps == 0 || st_.step % config_.logging.eval_every_n_steps != 0))
      evaluate(st_.step);
  }
  if (result.status != RunStatus::failed && checkpoints_->final_due(st_.step)) save(st_.step);
  finish(result);
  return result;
}

std::string Trainer::set_up() {
  // What each rank does alone comes first, and is agreed on before the collectives start.
  std::string error;
  try {
    if (config_.world_size() != world_->size()) {
      const std::string asked = "launch.nproc_per_node x launch.nnodes is " + std::to_string(config_.world_size());
      throw std::runtime_error(
          options_.world
              ? asked + " but the job has " + std::to_string(world_->size()) +
                    " ranks: set launch.nproc_per_node to match (npx fsdp-train --nproc N sets it and starts mpirun)"
              : asked + " but this process was not started by mpirun or srun: run npx fsdp-train --nproc " +
                    std::to_string(config_.world_size()) + " CONFIG, or mpirun -n " +
                    std::to_string(config_.world_size()) + " fsdp-train-native …");
    }
    // Before the first allocation: a plan this machine cannot hold is refused with the numbers.
    if (config_.launch.check_memory) {
      const std::string shortfall = memory_shortfall(plan_, config_, host_memory(), probe_devices());
      if (!shortfall.empty()) throw std::runtime_error(shortfall);
    }
    train_file_ = std::make_shared<TokenFile>(config_.data.train, static_cast<std::uint32_t>(config_.model.vocab_size));
    if (!config_.data.val.empty())
      val_file_ = std::make_shared<TokenFile>(config_.data.val, static_cast<std::uint32_t>(config_.model.vocab_size));
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = first_failure(*world_, error);
  if (!error.empty()) return error;
  // MFU against a true peak (backend/peak_flops.h): the datasheet's on GPUs, else this machine's
  // sgemm peak, cached per machine; rank 0 finds it while the others wait (measured together they
  // would share the cores).
  PeakFlops peak;
  if (rank0()) peak = machine_peak_flops(*backend_, options_.peak_flops);
  world_->broadcast(&peak.flops, sizeof peak.flops, 0);
  events_->set_peak(peak);
  try {
    device_world_ = device_collectives(*backend_, *world_, config_.launch.collectives);
    if (device_world_.owned && watched_world_) {
      watched_device_ = std::make_unique<WatchedCollectives>(*device_world_.world, clock_);
      device_world_.world = watched_device_.get();
    }
    // Allocation in the order of MEMORY.md: model state, then the data ring; activations per step.
    state_ = make_model_state(*backend_, layout_, config_, plan_, *world_, *device_world_.world);
    checkpoints_ = std::make_unique<Checkpoints>(config_.checkpointing, *folder_, *world_, layout_, *state_);
    model_ = make_model(*backend_, layout_, *state_, config_.model, plan_.policy);
    optimizer_ = std::make_unique<AdamW>(*backend_, layout_, config_.training);
    stream_ = std::make_unique<BatchStream>(
        backend_->batch_allocator(), train_file_, config_.training.batch_size_per_gpu, config_.data.seq_len,
        config_.data.shuffle, config_.training.seed, config_.data.prefetch_batches, world_->rank(), world_->size());
  } catch (const std::exception& e) {
    error = e.what();
  }
  return first_failure(*world_, error);
}

void Trainer::load(const std::string& path) {
  const nlohmann::json saved = checkpoints_->load(path);
  try {
    st_.from_json(saved);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": the trainer state: " + e.what());
  }
  // A checkpoint from beyond the end would "complete" at once without a step.
  if (st_.step > config_.training.max_steps) {
    throw std::runtime_error(path + ": saved at step " + std::to_string(st_.step) + ", beyond training.max_steps (" +
                             std::to_string(config_.training.max_steps) + "): raise training.max_steps to continue it");
  }
  // Positions count global micro-batches. A run with another global micro-batch (ranks x
  // batch_size_per_gpu) continues at the same sequence when the count divides evenly.
  const std::uint64_t global =
      static_cast<std::uint64_t>(config_.training.batch_size_per_gpu) * static_cast<std::uint64_t>(world_->size());
  if (st_.global_micro_batch != 0 && st_.global_micro_batch != global) {
    const std::uint64_t sequences = st_.data_position * st_.global_micro_batch;
    if (sequences % global != 0) {
      throw std::runtime_error(path + ": saved after " + std::to_string(sequences) +
                               " sequences in global micro-batches of " + std::to_string(st_.global_micro_batch) +
                               "; this run's global micro-batch (ranks x training.batch_size_per_gpu) is " +
                               std::to_string(global) +
                               ", which does not divide it: choose a batch size whose global micro-batch divides " +
                               std::to_string(sequences));
    }
    folder_->log("info", "the checkpoint's global micro-batch is " + std::to_string(st_.global_micro_batch) +
                             " sequences, this run's " + std::to_string(global) + ": continuing at sequence " +
                             std::to_string(sequences));
    st_.data_position = sequences / global;
  }
  st_.global_micro_batch = global;
  stream_->seek(st_.data_position);
}

void Trainer::initialise_parameters() {
  for (int u = 0; u < state_->unit_count(); ++u) {
    const LocalShard sh = state_->local(u);
    init_unit_range_on(*backend_, layout_.units[u], sh.offset, sh.count, sh.params, config_.training.seed,
                       config_.model.init_std, layout_.shape.L);
  }
  state_->publish_params();
  st_.global_micro_batch =
      static_cast<std::uint64_t>(config_.training.batch_size_per_gpu) * static_cast<std::uint64_t>(world_->size());
}

void Trainer::start(const std::string& resumed_from) {
  // run_start is what makes the run "running" in run.json (its supervisor writes that).
  write_run_start(resumed_from);
  checkpoints_->restart_clock();
  // A rollback needs somewhere to go back to, even before the first periodic checkpoint.
  if (checkpoints_->first_due(config_.stability.on_nan == "rollback", st_.step)) save(0);
}

void Trainer::write_run_start(const std::string& resumed_from) {
  // Every rank's host, pid and resident memory (model state and data ring, before any step).
  const std::vector<JobRank> ranks = gather_job(*world_, *backend_);
  if (world_->size() > 1 && !watchdog_) {
    watchdog_ = std::make_unique<CollectiveWatchdog>(
        ranks, world_->rank(), clock_, config_.launch.collective_timeout_s, config_.launch.heartbeat_timeout_s,
        [this](const std::string& reason) {
          // The main thread waits in a collective that will not complete: this thread ends the job.
          if (rank0()) folder_->end(RunStatus::failed, completed_step_.load(), reason);
          std::fprintf(stderr, "fsdp-train-native: rank %d: %s\n", world_->rank(), reason.c_str());
          std::fflush(stdout);
          std::fflush(stderr);
          std::_Exit(1);
        });
  }
  if (rank0() && !watch_) {
    // Rank 0 watches the ranks it can see (those on its own host) and the job's launcher.
    std::vector<WatchedProcess> watched = watchable(ranks, options_.launcher_pid, options_.launcher_name);
    std::vector<int> local_ranks;
    for (const auto& r : ranks)
      if (r.rank != 0 && r.host == ranks[0].host) local_ranks.push_back(r.pid);
    watch_ = std::make_unique<JobWatch>(*folder_, std::move(watched), std::move(local_ranks));
    watch_->at_step(st_.step);
  }
  events_->run_start(ranks, st_.step, layout_.total, resumed_from, device_world_.kind);
  // Matrix products on kernels below what the CPU runs (runtime/blas_kernels.h): said where people look.
  if (rank0() && config_.launch.device == "cpu") {
    const BlasKernels blas = current_blas_kernels();
    if (blas.slow) {
      folder_->log("warn", "BLAS: " + blas.note);
      std::fprintf(stderr, "fsdp-train-native: warning: BLAS: %s\n", blas.note.c_str());
    }
  }
}

void Trainer::write_step(long step, double loss, double lr, double grad_norm, double seconds, bool skipped) {
  StepRecord r{step, loss, lr, grad_norm, seconds, skipped, std::nullopt};
  if (scaler_.enabled()) r.loss_scale = scaler_.scale();
  events_->step(r);
}

double Trainer::mean_over_ranks(double local) {
  world_->all_reduce(&local, 1, CommType::f64);
  return local / world_->size();
}

double Trainer::run_micro_batches(long step, std::uint64_t first_position, StepProbe* probe,
                                  std::vector<std::vector<std::int32_t>>* tokens) {
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
      BatchStream::read(*train_file_, B, T, config_.data.shuffle, config_.training.seed, first_position + micro,
                        ids.data(), ids.data() + B * T, rank, ranks);
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
    const float scale = scaler_.enabled()
                            ? static_cast<float>(scaler_.scale() / (static_cast<double>(micro_steps) * ranks))
                            : 1.0f / (static_cast<float>(micro_steps) * static_cast<float>(ranks));
    loss += model_->forward_backward(batch, scale, step_dropout_key(config_.training.seed, step), probe);
  }
  return mean_over_ranks(loss / micro_steps);
}

Trainer::StepOutcome Trainer::train_step(long step) {
  const auto t0 = std::chrono::steady_clock::now();
  events_->step_begins();
  if (st_.skip_batches_at.count(step)) {
    // A rollback found this step's batches poisonous: take the next ones instead.
    st_.data_position += static_cast<std::uint64_t>(config_.training.gradient_accumulation_steps);
    stream_->seek(st_.data_position);
  }
  const std::uint64_t first_position = st_.data_position;
  const double lr = scheduled_lr(config_.training, step) * st_.lr_factor;

  state_->zero_grads();
  const std::optional<Planting> plant = planting_->activations(step);
  const bool checking = config_.debug.check_numerics;
  std::unique_ptr<StepInspector> inspector;
  if (plant || checking)
    inspector = std::make_unique<StepInspector>(*backend_, plant ? &*plant : nullptr, checking,
                                                static_cast<int>(layout_.shape.L));
  const double loss = run_micro_batches(step, first_position, inspector.get(), nullptr);
  st_.data_position = stream_->position();
  if (inspector && inspector->planted()) planting_->planted(step);
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
  for (auto [metric, value, detector] :
       {std::tuple<const char*, double, SpikeDetector*>{"loss", loss, &st_.loss_spikes},
        {"grad_norm", grad_norm, &st_.grad_norm_spikes}}) {
    if (const auto z = detector->check(value)) {
      const bool skipping = stab.on_spike == "skip";
      skip = skip || skipping;
      folder_->write({{"type", "anomaly"},
                      {"step", step},
                      {"kind", "spike"},
                      {"where", {{"phase", "loss"}}},
                      {"action", skipping ? "skip" : "report"},
                      {"value", value},
                      {"zscore", *z},
                      {"metric", metric},
                      {"dump", nullptr}});
    }
  }

  if (!skip) {
    const double max_norm = config_.training.max_grad_norm;
    const float clip =
        scaler_.enabled()
            ? static_cast<float>((max_norm > 0 && grad_norm > max_norm ? max_norm / (grad_norm + 1e-6) : 1.0) /
                                 scaler_.scale())
        : max_norm > 0 && grad_norm > max_norm ? static_cast<float>(max_norm / (grad_norm + 1e-6))
                                               : 1.0f;
    const std::optional<UpdatePoison> poison = planting_->update(step, layout_);
    // The norm of the gradients as stored: under float16 they still carry the loss scale.
    const auto bad =
        optimizer_->step(*state_, st_.adam_t + 1, lr, clip, grad_norm * scaler_.scale(), poison ? &*poison : nullptr);
    if (poison) planting_->planted(step);
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

void Trainer::evaluate(long step) {
  if (!val_file_) return;
  const long B = config_.training.batch_size_per_gpu, T = config_.data.seq_len;
  Buffer ids = backend_->batch_allocator().allocate(MemoryCategory::other, 8 * static_cast<std::size_t>(B * T));
  double total = 0;
  const int batches = config_.logging.eval_batches;
  for (int k = 0; k < batches; ++k) {
    // The first eval_batches global batches of the validation file, in file order: the same every time.
    BatchStream::read(*val_file_, B, T, false, 0, static_cast<std::uint64_t>(k), ids.i32(), ids.i32() + B * T,
                      world_->rank(), world_->size());
    total += model_->evaluate({ids.i32(), ids.i32() + B * T, B, T});
  }
  events_->eval(step, mean_over_ranks(total / batches));
}

void Trainer::save(long step) {
  st_.step = step;
  checkpoints_->save(step, st_.to_json());
}

void Trainer::finish(const RunResult& r, bool together) {
  folder_->end(r.status, r.step, r.reason);
  // Ranks now leave one by one: that is no longer a rank dying. No rank leaves before rank 0 has
  // written the end (mpirun stops the others as soon as one exits with a failure code).
  if (watch_) watch_->stop();
  // A fault may have reached this rank alone (rank 0's writes): the others may be in another
  // collective, so a barrier could wait forever; this rank ends the job instead (RunResult::alone).
  if (together) world_->barrier();
  if (watchdog_) watchdog_->stop();
}

}  // namespace fsdp
