#include "train/step_events.h"

#include <algorithm>

#include "metrics/metrics_log.h"
#include "parallel/agreement.h"
#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_probe.h"
#include "runtime/files.h"
#include "runtime/threads.h"

namespace fsdp {

namespace {

/** NVML's and the runtime's readings of the GPU, as step events carry them (`gpu`). */
nlohmann::json device_readings_json(const DeviceReadings& r) {
  nlohmann::json j = {{"context_bytes", r.context_bytes}, {"library_workspace_bytes", r.library_workspace_bytes}};
  if (r.util_percent) j["util"] = *r.util_percent;
  if (r.mem_used) j["mem_used"] = *r.mem_used;
  if (r.mem_total) j["mem_total"] = *r.mem_total;
  if (r.temperature_c) j["temp_c"] = *r.temperature_c;
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

nlohmann::json by_category(const MemoryUsage& m) {
  nlohmann::json j;
  for (int k = 0; k < kMemoryCategories; ++k) j[category_name(static_cast<MemoryCategory>(k))] = m.bytes[k];
  j["total"] = m.total;
  return j;
}

StepEvents::StepEvents(RunFolder& folder, Collectives& world, Backend& backend, const RunConfig& config,
                       const MemoryPlan& plan, double flops_per_token)
    : folder_(folder),
      world_(world),
      backend_(backend),
      config_(config),
      plan_(plan),
      flops_per_token_(flops_per_token) {}

void StepEvents::run_start(const std::vector<JobRank>& ranks, long start_step, std::uint64_t n_params,
                           const std::string& resumed_from, const std::string& collectives) {
  nlohmann::json world_ranks = nlohmann::json::array();
  for (const auto& r : ranks) {
    world_ranks.push_back({{"rank", r.rank},
                           {"host", r.host},
                           {"device", config_.launch.device},
                           {"pid", r.pid},
                           {"mem_resident", by_category(r.resident)},
                           {"mem_resident_host", by_category(r.resident_host)}});
  }
  const DeviceProbe probe = probe_devices();
  nlohmann::json e = {{"type", "run_start"},
                      {"config", config_.resolved},
                      {"world", {{"size", world_.size()}, {"ranks", world_ranks}}},
                      {"memory_plan", plan_.to_json()},
                      {"start_step", start_step},
                      {"n_params", n_params},
                      {"flops_per_token", flops_per_token_},
                      {"peak_flops", peak_.flops},
                      {"peak_source", peak_.source},
                      {"host_memory", probe.cpu.memory_bytes},
                      {"runtime",
                       {{"version", "0.1.0"},
                        {"backend", backend_.name()},
                        {"compute_dtype", dtype_name(backend_.compute_dtype())},
                        {"blas", probe.blas},
                        {"blas_kernels", probe.blas_kernels.to_json()},
                        {"threads", current_threads()},
                        {"collectives", collectives},
                        {"attention", backend_.attention_kernels(config_.training.batch_size_per_gpu,
                                                                 config_.model.d_model, config_.model.n_heads)}}}};
  // Which GEMM the CPU backend's products run: OpenBLAS in float32, or oneDNN's bf16 GEMM and its ISA.
  if (const auto* cpu = dynamic_cast<const CpuBackend*>(&backend_))
    e["runtime"]["gemm"] = cpu_gemm_json(cpu->bf16_gemm());
  if (peak_.measured > 0) e["peak_measured"] = peak_.measured;
  if (folder_.writer()) e["run_id"] = folder_.run_id();
  if (!folder_.attempt().empty()) e["attempt"] = folder_.attempt();
  if (!resumed_from.empty()) e["resumed_from"] = resumed_from;
  folder_.write(e);
}

void StepEvents::step_begins() {
  step_cpu_start_ = process_cpu_seconds();
  backend_.allocator().reset_peak();
  backend_.host_allocator().reset_peak();
}

nlohmann::json StepEvents::step_event(const StepRecord& s, const MemoryUsage& device, const MemoryUsage& host,
                                      double seconds, double cpu_seconds, double resident, int ranks,
                                      const std::optional<nlohmann::json>& gpu) const {
  const double tokens = static_cast<double>(config_.training.batch_size_per_gpu) * config_.data.seq_len *
                        config_.training.gradient_accumulation_steps;
  // flops_per_s and mfu are one rank's; tokens_per_s counts the tokens of `ranks` ranks.
  const double flops = tokens * flops_per_token_ / seconds;
  nlohmann::json e = {{"type", "step"},
                      {"step", s.step},
                      {"loss", finite_or_null(s.loss)},
                      {"lr", s.lr},
                      {"grad_norm", finite_or_null(s.grad_norm)},
                      {"tokens_per_s", tokens * ranks / seconds},
                      {"step_ms", 1000.0 * seconds},
                      {"cpu_ms", 1000.0 * cpu_seconds},
                      {"mem_peak", device.total},
                      {"mem_peak_by_category", by_category(device)},
                      {"flops_per_s", flops},
                      {"mfu", peak_.flops > 0 ? std::min(1.0, flops / peak_.flops) : 0.0}};
  // What the operating system counts for the process, beside what the allocator counts (the dashboard draws both).
  if (resident > 0) e["mem_rss"] = resident;
  if (plan_.host.total > 0) e["mem_peak_host_by_category"] = by_category(host);
  if (peak_raised_at_ == s.step) e["peak_flops"] = peak_.flops;  // MFU's peak from this step on
  if (s.skipped) e["skipped"] = true;
  if (s.loss_scale) e["loss_scale"] = *s.loss_scale;
  if (gpu) e["gpu"] = *gpu;
  return e;
}

void StepEvents::step(const StepRecord& s) {
  if (!s.skipped && s.step % config_.logging.every_n_steps != 0 && s.step != config_.training.max_steps) return;
  const int W = world_.size();
  // Every rank's peaks and time, to rank 0, which writes the run's event and one per rank.
  std::vector<double> mine;
  append_usage(mine, backend_.allocator().peak());
  append_usage(mine, backend_.host_allocator().peak());
  mine.push_back(s.seconds);
  mine.push_back(process_cpu_seconds() - step_cpu_start_);
  mine.push_back(static_cast<double>(process_resident_bytes()));
  const std::vector<double> all = W > 1 ? gather_values(world_, mine) : mine;
  if (!folder_.writer()) return;
  std::optional<nlohmann::json> gpu;
  if (const auto r = backend_.readings()) gpu = device_readings_json(*r);  // this rank's GPU
  const std::size_t per_rank = mine.size();
  auto at = [&](int r, std::size_t k) { return all[r * per_rank + k]; };
  constexpr std::size_t kCpu = 2 * kUsageValues + 1, kResident = 2 * kUsageValues + 2;
  // Model FLOP/s above the peak: the peak was too low (measured under load), and is raised first.
  const double tokens = static_cast<double>(config_.training.batch_size_per_gpu) * config_.data.seq_len *
                        config_.training.gradient_accumulation_steps;
  double fastest = tokens * flops_per_token_ / std::max(s.seconds, 1e-9);
  for (int r = 0; r < W; ++r)
    fastest = std::max(fastest, tokens * flops_per_token_ / std::max(at(r, 2 * kUsageValues), 1e-9));
  if (peak_.flops > 0 && fastest > peak_.flops) raise_peak(fastest, s.step);
  if (W == 1) {
    folder_.write(step_event(s, usage_at(all.data()), usage_at(all.data() + kUsageValues), s.seconds, at(0, kCpu),
                             at(0, kResident), 1, gpu));
    return;
  }
  // The run's event: the global batch's throughput, and the highest peak of any rank.
  MemoryUsage device_max, host_max;
  double resident_max = 0;
  for (int r = 0; r < W; ++r) {
    resident_max = std::max(resident_max, at(r, kResident));
    const MemoryUsage d = usage_at(all.data() + r * per_rank), h = usage_at(all.data() + r * per_rank + kUsageValues);
    for (int k = 0; k < kMemoryCategories; ++k)
      device_max.bytes[k] = std::max(device_max.bytes[k], d.bytes[k]),
      host_max.bytes[k] = std::max(host_max.bytes[k], h.bytes[k]);
    device_max.total = std::max(device_max.total, d.total);
    host_max.total = std::max(host_max.total, h.total);
  }
  folder_.write(step_event(s, device_max, host_max, s.seconds, at(0, kCpu), resident_max, W, gpu));
  for (int r = 0; r < W; ++r) {
    const double* p = all.data() + r * per_rank;
    nlohmann::json e =
        step_event(s, usage_at(p), usage_at(p + kUsageValues), p[2 * kUsageValues], p[kCpu], p[kResident], 1, gpu);
    e["rank"] = r;
    folder_.write(e);
  }
}

void StepEvents::raise_peak(double flops, long step) {
  const double before = peak_.flops;
  peak_.flops = flops;
  peak_raised_at_ = step;
  const std::string by = "run " + folder_.run_id() + " at step " + std::to_string(step);
  const bool cached = raise_cached_peak(peak_.cache_key, flops, by);
  folder_.log("info", "MFU's peak raised from " + format_gflops(before) + " to " + format_gflops(flops) + " at step " +
                          std::to_string(step) +
                          ": this run's model FLOP/s went above it, so it was below what this machine does" +
                          (cached ? " (raised in " + peak_cache_path() + " too)" : ""));
}

void StepEvents::eval(long step, double val_loss) {
  folder_.write({{"type", "eval"}, {"step", step}, {"val_loss", finite_or_null(val_loss)}});
}

}  // namespace fsdp
