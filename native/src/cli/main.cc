// fsdp-train-native: the runtime's command-line entry. People run it through `npx fsdp-train`,
// which validates and resolves the YAML config and creates the run directory first; remote hosts
// may run it directly with a resolved config JSON.
//
//   fsdp-train-native --version               what this build can do (JSON)
//   fsdp-train-native --probe                 CPU, memory, GPUs (JSON)
//   fsdp-train-native --check CONFIG.json     the runtime's own checks; exit 2 on errors
//   fsdp-train-native --plan CONFIG.json      the memory plan (JSON, native/MEMORY.md)
//   fsdp-train-native --sgemm-peak [N]        OpenBLAS sgemm FLOP/s on N x N (default 2048): MFU's peak,
//                                             which at 2048 raises the cached peak when faster
//   fsdp-train-native --peak-cache-key THREADS  where MFU's peak is cached, and its key (JSON)
//   fsdp-train-native --config CONFIG.json --run-dir DIR [--resume auto|never|CHECKPOINT] [--peak-flops F]
//                                             train: events to DIR/metrics.jsonl and stdout,
//                                             DIR/run.json kept current, checkpoints in DIR
//   fsdp-train-native --allreduce-check       under mpirun: sums known values across the ranks
//                                             and checks every collective's result (JSON)
//   fsdp-train-native --export-checkpoint CHECKPOINT OUT_DIR
//                                             a sharded checkpoint as one full one (OUT_DIR/step-N)
//   fsdp-train-native --export-hf CONFIG.json CHECKPOINT OUT_DIR
//                                             a checkpoint (any world size) as a Hugging Face GPT-2
//                                             folder: config.json + model.safetensors
//   fsdp-train-native --import-hf CONFIG.json HF_DIR CHECKPOINT_DIR
//                                             a Hugging Face GPT-2 folder as the step-0 checkpoint
//                                             of a run of CONFIG (CHECKPOINT_DIR/step-00000000)
//   fsdp-train-native --logits CONFIG.json CHECKPOINT
//                                             the model's logits for the token ids on standard
//                                             input ([[ids of a sequence], ...], JSON) as JSON
//   fsdp-train-native --lock-run-folder FD PID  whether the run folder is free (run_folder/run_folder_lock.h)
//
// Several processes: mpirun -n N fsdp-train-native --config … (or srun), with launch.nproc_per_node
// x launch.nnodes = N; `npx fsdp-train --nproc N CONFIG` runs mpirun for you. Every rank runs the
// same command; rank 0 writes the run folder.
//
// CONFIG "-" reads standard input. Exit codes: 0 completed, 1 failed (a NaN the policy stopped
// on, an unusable checkpoint, an I/O error, a rank that died), 2 bad arguments or config, 128 + N
// stopped by signal N (SIGINT, SIGTERM, and SIGUSR1, which mpirun forwards to every rank: the run
// stops after the current step and saves a checkpoint).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_decoder.h"
#include "checkpoint/hf_gpt2.h"
#include "config/load.h"
#include "validation/validate.h"
#include "backend/backend.h"
#include "memory/memory_plan.h"
#include "model/model.h"
#include "parallel/replicated_state.h"
#include "parallel/allreduce_check.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/device_probe.h"
#include "backend/peak_flops.h"
#include "runtime/blas_kernels.h"
#include "runtime/files.h"
#include "runtime/process_start.h"
#include "runtime/threads.h"
#include "run_folder/run_folder_lock.h"
#include "train/run_folder.h"
#include "train/trainer.h"
#include "train/trainer_state.h"
#ifdef FSDP_MPI_BUILT
#include "parallel/mpi/mpi_collectives.h"
#endif

namespace {

constexpr int kExitConfig = 2;

int usage() {
  std::cerr << "usage: fsdp-train-native --version | --probe | --check CONFIG.json | --plan CONFIG.json | --sgemm-peak "
               "[N] | --peak-cache-key THREADS | --allreduce-check\n"
               "       fsdp-train-native --config CONFIG.json --run-dir DIR [--resume auto|never|CHECKPOINT] "
               "[--peak-flops FLOPS]\n"
               "       fsdp-train-native --export-checkpoint CHECKPOINT OUT_DIR\n"
               "       fsdp-train-native --export-hf CONFIG.json CHECKPOINT OUT_DIR | --import-hf CONFIG.json HF_DIR "
               "CHECKPOINT_DIR\n"
               "       fsdp-train-native --logits CONFIG.json CHECKPOINT < TOKENS.json\n";
  return kExitConfig;
}

std::atomic<int> g_stop_signal{0};

void on_stop_signal(int signo) {
  g_stop_signal.store(signo);
}

/** SIGINT, SIGTERM and SIGUSR1 (what mpirun forwards to every rank without stopping them itself) ask for a stop. */
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

int print_probe() {
  const fsdp::DeviceProbe p = fsdp::probe_devices();
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : p.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"memory_bytes", g.memory_bytes},
                    {"compute_capability",
                     std::to_string(g.compute_capability_major) + "." + std::to_string(g.compute_capability_minor)}});
  }
  nlohmann::json out = {
      {"cpu",
       {{"logical_cores", p.cpu.logical_cores},
        {"omp_max_threads", p.cpu.omp_max_threads},
        {"memory_bytes", p.cpu.memory_bytes},
        {"model_name", p.cpu.model_name}}},
      {"gpus", gpus},
      {"cuda_built", p.cuda_built},
      {"blas", p.blas},
      {"blas_kernels", p.blas_kernels.to_json()},
      // The CPU backend's matrix products in float32 and in bf16 (mixed_precision.param_dtype), and
      // whether bf16 runs here (backend/cpu/bf16_gemm.h).
      {"cpu_gemm", {{"float32", fsdp::cpu_gemm_json(false)}, {"bfloat16", fsdp::cpu_gemm_json(true)}}},
  };
  std::cout << out.dump(2) << "\n";
  return 0;
}

// What this build can do, so the editor can tell a partial build from a missing one.
int print_version() {
  nlohmann::json capabilities = {"probe",     "check",     "plan",  "train", "export-checkpoint",
                                 "export-hf", "import-hf", "logits"};
#ifdef FSDP_MPI_BUILT
  capabilities.push_back("mpi");
  capabilities.push_back("allreduce-check");
#endif
  nlohmann::json out = {{"name", "fsdp-train-native"}, {"version", "0.1.0"}, {"capabilities", capabilities}};
  std::cout << out.dump() << "\n";
  return 0;
}

/** The config file's JSON, or nothing after printing (when `report`) why it cannot be read. */
std::optional<nlohmann::json> read_config(const std::string& path, bool report = true) {
  try {
    return fsdp::read_config_file(path);
  } catch (const std::exception& e) {
    if (report) std::cerr << e.what() << "\n";
    return std::nullopt;
  }
}

std::string shown(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

/** Reads and checks a config; prints problems as "FILE key: message" when `report`. Returns false on errors. */
bool load_config(const std::string& path, bool check_files, fsdp::RunConfig& config, bool report = true) {
  const auto value = read_config(path, report);
  if (!value) return false;
  fsdp::ValidateOptions options;
  options.check_files = check_files;
  options.cuda_built = fsdp::probe_devices().cuda_built;
  const auto problems = fsdp::check_run_config(*value, fsdp::config_base_dir(path), options, &config);
  if (report)
    for (const auto& p : problems) std::cerr << fsdp::format_problem(shown(path), p) << "\n";
  return !fsdp::has_errors(problems);
}

int print_plan(const std::string& path) {
  const auto value = read_config(path);
  if (!value) return kExitConfig;
  // A plan can be made for configs this build cannot run (cuda, bfloat16, several ranks).
  const fsdp::ParsedConfig parsed = fsdp::parse_run_config(*value, fsdp::config_base_dir(path));
  for (const auto& p : parsed.problems) std::cerr << fsdp::format_problem(shown(path), p) << "\n";
  if (!parsed.ok()) return kExitConfig;
  if (const std::string too_large = fsdp::plan_size_problem(parsed.config); !too_large.empty()) {
    std::cerr << fsdp::format_problem(shown(path), {"training.batch_size_per_gpu", too_large}) << "\n";
    return kExitConfig;
  }
  std::cout << fsdp::plan_memory(parsed.config).to_json().dump(2) << "\n";
  return 0;
}

int print_sgemm_peak(long n) {
  fsdp::use_threads(fsdp::resolve_threads(0, 1));
  auto backend = fsdp::make_backend("cpu");
  const fsdp::SgemmSpeed s = fsdp::measure_sgemm(*backend, n, fsdp::kPeakSgemmRepeats);
  nlohmann::json out = {
      {"n", n},           {"repeats", fsdp::kPeakSgemmRepeats}, {"threads", fsdp::current_threads()},
      {"flops", s.flops}, {"cpu_flops", s.cpu_flops},           {"kernels", fsdp::current_blas_kernels().core}};
  // The peak's own measurement: the best this machine reached counts for MFU (backend/peak_flops.h).
  if (n == fsdp::kPeakSgemmN) out["cache"] = fsdp::record_sgemm_peak(s, fsdp::current_threads());
  std::cout << out.dump() << "\n";
  return 0;
}

/** Where MFU's peak for THREADS threads is cached, and under which key (backend/peak_flops.h). */
int print_peak_cache_key(int threads) {
  if (threads <= 0) {
    std::cerr << "fsdp-train-native: --peak-cache-key THREADS: THREADS must be a positive number\n";
    return kExitConfig;
  }
  std::cout << nlohmann::json{{"path", fsdp::peak_cache_path()}, {"key", fsdp::peak_cache_key(threads)}}.dump() << "\n";
  return 0;
}

/** The job's ranks when an MPI launcher started this process; null for one process. */
struct Job {
#ifdef FSDP_MPI_BUILT
  std::unique_ptr<fsdp::MpiSession> session;
#endif
  std::unique_ptr<fsdp::Collectives> world;
};

Job join_job(int* argc, char*** argv) {
  Job job;
#ifdef FSDP_MPI_BUILT
  if (fsdp::launched_by_mpi()) {
    job.session = std::make_unique<fsdp::MpiSession>(argc, argv);
    job.world = job.session->world();
  }
#else
  (void)argc, (void)argv;
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")) {
    std::cerr << "fsdp-train-native: started by an MPI launcher, but this build has no MPI (install libopenmpi-dev and "
                 "rebuild: node scripts/setup/native.mjs --force)\n";
    std::exit(kExitConfig);
  }
#endif
  return job;
}

/**
 * A failure that reached this rank alone (RunResult::alone): the other ranks wait for it in a
 * collective, and an ordinary exit would wait for them in MPI_Finalize — the job hung until another
 * rank's watchdog gave up (twice the collective timeout when rank 0 had failed: issue 41). Rank 0 has
 * written the run's end; another rank says its own on stderr, the line the supervisor reads an end
 * the runtime could not log from (native/FORMATS.md). Then every process of the job ends at once.
 */
[[noreturn]] void end_job_of_failed_rank(Job& job, const fsdp::RunResult& r, int rank) {
  if (rank != 0) {
    nlohmann::json end = {{"type", "run_end"},
                          {"status", "failed"},
                          {"step", r.step},
                          {"reason", "rank " + std::to_string(rank) + ": " + r.reason}};
    if (const std::string attempt = fsdp::run_attempt_from_env(); !attempt.empty()) end["attempt"] = attempt;
    std::cerr << "fsdp-train-native: rank " << rank << ": " << r.reason << "\n";
    std::cerr << "fsdp-train-native: run_end " << end.dump() << "\n";
  }
  std::cerr << "fsdp-train-native: rank " << rank << " failed alone: ending every rank of the job\n";
  std::cerr.flush();
  std::fflush(stderr);
#ifdef FSDP_MPI_BUILT
  if (job.session) job.session->abort_job(1);
#else
  (void)job;
#endif
  std::_Exit(1);
}

/**
 * The launcher that started this job, when it runs on this host and is not this process: fsdp-train,
 * or what the editor's detached start exec'd (mpirun on an SSH host or across hosts). Rank 0
 * watches it and ends the run, saying so, when it is killed (native/FORMATS.md, "the run's owner").
 */
int launcher_pid() {
  const char* pid = std::getenv("FSDP_LAUNCHER_PID");
  const char* host = std::getenv("FSDP_LAUNCHER_HOST");
  if (!pid || !host || fsdp::host_name() != host) return 0;
  const int launcher = std::atoi(pid);
  return launcher == ::getpid() ? 0 : launcher;
}

std::string launcher_name() {
  const char* name = std::getenv("FSDP_LAUNCHER_NAME");
  return name && *name ? name : "its launcher";
}

int train(int argc, char** argv) {
  std::string config_path, run_dir, resume;
  double peak_flops = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--config" && has_value)
      config_path = argv[++i];
    else if (a == "--run-dir" && has_value)
      run_dir = argv[++i];
    else if (a == "--resume" && has_value)
      resume = argv[++i];
    else if (a == "--peak-flops" && has_value)
      peak_flops = std::atof(argv[++i]);
    else {
      std::cerr << "fsdp-train-native: unknown or incomplete argument " << a << "\n";
      return usage();
    }
  }
  if (config_path.empty() || run_dir.empty()) return usage();
  // Stop after the current step, leaving a checkpoint and a run_end event behind. Set before the
  // job is joined too: a stop can come while MPI starts up (SLURM sends a job's time-limit signal
  // up to a minute early, so a short job may get it at once), and the default action would kill
  // the rank with nothing saved; set again after, in case MPI's start-up put its own in place.
  install_stop_handlers();
  Job job = join_job(&argc, &argv);
  install_stop_handlers();
  const bool rank0 = !job.world || job.world->rank() == 0;
  fsdp::RunConfig config;
  // Every rank reads the config (the same answer everywhere); rank 0 alone reports its problems.
  if (!load_config(config_path, true, config, rank0)) return kExitConfig;

  fsdp::TrainerOptions options;
  options.run_dir = run_dir;
  options.resume = resume;
  options.peak_flops = peak_flops;
  options.stop = &g_stop_signal;
  options.world = job.world.get();
  if (rank0) {
    options.launcher_pid = launcher_pid();
    options.launcher_name = launcher_name();
  }
  try {
    fsdp::Trainer trainer(config, options);
    const fsdp::RunResult r = trainer.run();
    if (r.status == fsdp::RunStatus::failed && rank0)
      std::cerr << "fsdp-train-native: run failed: " << r.reason << "\n";
    if (r.alone) end_job_of_failed_rank(job, r, job.world->rank());
    switch (r.status) {
      case fsdp::RunStatus::completed:
        return 0;
      case fsdp::RunStatus::failed:
        return 1;
      case fsdp::RunStatus::stopped:
        return 128 + g_stop_signal.load();
    }
  } catch (const std::exception& e) {
    std::cerr << "fsdp-train-native: "
              << (job.world && job.world->size() > 1 ? "rank " + std::to_string(job.world->rank()) + ": " : "")
              << e.what() << "\n";
  }
  return 1;
}

int allreduce_check(int argc, char** argv) {
  Job job = join_job(&argc, &argv);
  fsdp::SingleProcess alone;
  fsdp::Collectives& world = job.world ? *job.world : alone;
  const nlohmann::json result = fsdp::check_collectives(world);
  if (world.rank() == 0) std::cout << result.dump() << "\n";
  return result.value("ok", false) ? 0 : 1;
}

int export_checkpoint(const std::string& from, const std::string& to) {
  try {
    const fsdp::SavedCheckpoint c = fsdp::export_checkpoint(from, to);
    std::cout << nlohmann::json{{"path", c.path}, {"step", c.step}, {"bytes", c.bytes}}.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fsdp-train-native: " << e.what() << "\n";
    return 1;
  }
}

/** The config's model, for the Hugging Face commands: its data files need not exist here. */
bool load_model_config(const std::string& path, fsdp::RunConfig& config) {
  return load_config(path, false, config);
}

int export_hf(const std::string& config_path, const std::string& checkpoint, const std::string& out_dir) {
  fsdp::RunConfig config;
  if (!load_model_config(config_path, config)) return kExitConfig;
  try {
    // GPT2LMHeadModel, or the family's LlamaForCausalLM / Qwen3ForCausalLM.
    const bool decoder = config.model.llama_family();
    if (decoder)
      fsdp::export_hf_decoder(checkpoint, config.model, out_dir);
    else
      fsdp::export_hf_gpt2(checkpoint, config.model, out_dir);
    const nlohmann::json hf_config =
        decoder ? fsdp::hf_decoder_config(config.model) : fsdp::hf_gpt2_config(config.model);
    std::cout << nlohmann::json{{"path", out_dir}, {"config", hf_config}}.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fsdp-train-native: " << e.what() << "\n";
    return 1;
  }
}

int import_hf(const std::string& config_path, const std::string& hf_dir, const std::string& checkpoint_dir) {
  fsdp::RunConfig config;
  if (!load_model_config(config_path, config)) return kExitConfig;
  try {
    // The state of a run before its first step: it starts from the imported weights.
    const fsdp::TrainerState fresh(config.stability.spike_zscore, config.stability.spike_window);
    const fsdp::SavedCheckpoint c = config.model.llama_family()
                                        ? fsdp::import_hf_decoder(hf_dir, config.model, fresh.to_json(), checkpoint_dir)
                                        : fsdp::import_hf_gpt2(hf_dir, config.model, fresh.to_json(), checkpoint_dir);
    std::cout << nlohmann::json{{"path", c.path}, {"step", c.step}, {"bytes", c.bytes}}.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fsdp-train-native: " << e.what() << "\n";
    return 1;
  }
}

/** Logits of the checkpoint's model (float32, one process) for sequences of token ids read as JSON from standard input.
 */
int print_logits(const std::string& config_path, const std::string& checkpoint) {
  fsdp::RunConfig config;
  if (!load_model_config(config_path, config)) return kExitConfig;
  try {
    const nlohmann::json rows = nlohmann::json::parse(std::cin);
    const long B = static_cast<long>(rows.size());
    const long T = B > 0 && rows[0].is_array() ? static_cast<long>(rows[0].size()) : 0;
    if (B == 0 || T == 0 || T > config.model.max_seq_len)
      throw std::runtime_error(
          "standard input: expected [[token ids], ...] of equal lengths from 1 to model.max_seq_len (" +
          std::to_string(config.model.max_seq_len) + ")");
    std::vector<std::int32_t> inputs, targets(static_cast<std::size_t>(B * T), 0);
    for (const auto& row : rows) {
      if (!row.is_array() || static_cast<long>(row.size()) != T)
        throw std::runtime_error("standard input: every sequence must hold " + std::to_string(T) + " token ids");
      for (const auto& id : row) {
        if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= config.model.vocab_size)
          throw std::runtime_error("standard input: " + id.dump() + " is not a token id below model.vocab_size");
        inputs.push_back(id.get<std::int32_t>());
      }
    }
    const fsdp::ParamLayout layout = fsdp::ParamLayout::of(fsdp::ModelShape::of(config.model));
    const std::unique_ptr<fsdp::Backend> be = fsdp::make_backend("cpu");
    fsdp::ReplicatedState state(*be, layout, /*with_optimizer_state=*/true);
    fsdp::load_checkpoint(checkpoint, layout, state);
    const std::unique_ptr<fsdp::Model> model = fsdp::make_model(
        *be, layout, state, config.model, fsdp::ActivationPolicy::none(static_cast<int>(layout.shape.L)));
    std::vector<float> logits(static_cast<std::size_t>(B * T * layout.shape.V));
    model->evaluate({inputs.data(), targets.data(), B, T}, logits.data());
    std::cout << nlohmann::json{{"shape", {B, T, layout.shape.V}}, {"logits", logits}}.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fsdp-train-native: " << e.what() << "\n";
    return 1;
  }
}

/**
 * For fsdp-train, before it writes a run folder: locks the lock file it opened and passed as `fd`
 * on behalf of `holder_pid` (the lock belongs to the open file, which fsdp-train keeps for the
 * run's life). Exit 0 when taken; 3, with the holder on standard output, when another holds it.
 */
int lock_run_folder(int fd, int holder_pid) {
  try {
    std::string holder;
    if (fsdp::lock_run_folder_fd(fd, holder_pid, &holder)) return 0;
    std::cout << holder << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "fsdp-train-native: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  fsdp::prepare_process_environment(argv);
  const std::string cmd = argc >= 2 ? argv[1] : "";
  if (cmd == "--probe" && argc == 2) return print_probe();
  if (cmd == "--version" && argc == 2) return print_version();
  if (cmd == "--plan" && argc == 3) return print_plan(argv[2]);
  if (cmd == "--check" && argc == 3) {
    fsdp::RunConfig config;
    return load_config(argv[2], true, config) ? 0 : kExitConfig;
  }
  if (cmd == "--sgemm-peak" && argc <= 3) return print_sgemm_peak(argc == 3 ? std::atol(argv[2]) : fsdp::kPeakSgemmN);
  if (cmd == "--peak-cache-key" && argc == 3) return print_peak_cache_key(std::atoi(argv[2]));
  if (cmd == "--allreduce-check" && argc == 2) return allreduce_check(argc, argv);
  if (cmd == "--export-checkpoint" && argc == 4) return export_checkpoint(argv[2], argv[3]);
  if (cmd == "--export-hf" && argc == 5) return export_hf(argv[2], argv[3], argv[4]);
  if (cmd == "--import-hf" && argc == 5) return import_hf(argv[2], argv[3], argv[4]);
  if (cmd == "--logits" && argc == 4) return print_logits(argv[2], argv[3]);
  if (cmd == "--lock-run-folder" && argc == 4) return lock_run_folder(std::atoi(argv[2]), std::atoi(argv[3]));
  if (cmd == "--config" || cmd == "--run-dir") return train(argc, argv);
  return usage();
}
