#include "backend/peak_flops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_probe.h"
#include "runtime/files.h"
#include "runtime/threads.h"

namespace fsdp {

SgemmSpeed measure_sgemm(Backend& be, long n, int repeats) {
  Allocator& alloc = be.allocator();
  SgemmSpeed best;
  {
    const std::size_t bytes = sizeof(float) * n * n;
    Buffer a = alloc.allocate(MemoryCategory::workspace, bytes), b = alloc.allocate(MemoryCategory::workspace, bytes),
           c = alloc.allocate(MemoryCategory::workspace, bytes);
    be.fill(a.f32(), n * n, 0.5f);
    be.fill(b.f32(), n * n, 0.25f);
    be.gemm(false, false, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);  // warm-up: threads, pages
    const double flop = 2.0 * n * n * n;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = process_cpu_seconds();
      be.gemm(false, false, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);
      best.flops = std::max(best.flops, flop / seconds_since(t0));
      best.cpu_flops = std::max(best.cpu_flops, flop * current_threads() / (process_cpu_seconds() - c0));
    }
  }
  alloc.release_cache();  // nothing of this stays reserved for the run
  return best;
}

namespace {

constexpr int kCacheVersion = 2;

std::string day_of(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  char buf[16];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

nlohmann::json empty_cache() {
  return {{"v", kCacheVersion}, {"machines", nlohmann::json::object()}};
}

/** The cache file, or an empty cache: a missing, broken or older-format file is measured over, never trusted or fatal.
 */
nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return empty_cache();
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || j.value("v", 0) != kCacheVersion || !j.contains("machines") || !j["machines"].is_object())
    return empty_cache();
  return j;
}

void write_cache(const std::string& path, const nlohmann::json& cache) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_file_atomically(path, cache.dump(2) + "\n");
}

/** A usable entry: a positive peak, measured less than a week ago (and not in the future). */
bool fresh(const nlohmann::json& e, double now) {
  if (!e.is_object()) return false;
  const double flops = e.value("flops", 0.0), measured = e.value("measured", 0.0);
  return flops > 0 && measured <= now + 60 && now - measured < kPeakCacheMaxAgeDays * 86400.0;
}

PeakFlops datasheet_peak(Backend& be) {
  const DeviceProbe probe = probe_devices();
  std::set<std::string> names;
  for (const auto& g : probe.gpus) names.insert(g.name);
  const std::string device = names.size() == 1 ? *names.begin() : "this GPU";
  return {be.nominal_peak_flops(),
          "datasheet peak of " + device + " in " + dtype_name(be.compute_dtype()) +
              " (dense): " + format_gflops(be.nominal_peak_flops()),
          0, ""};
}

/**
 * What the backend's matrix products run on where that is not float32 sgemm: a CPU run with
 * bf16 products (mixed_precision.param_dtype bfloat16) goes through oneDNN's bf16 GEMM, whose peak
 * is some 3x sgemm's — its own entry, so that neither raises nor lowers the other's MFU.
 */
std::string products_of(Backend& be) {
  const auto* cpu = dynamic_cast<const CpuBackend*>(&be);
  return cpu && cpu->bf16_gemm() ? "bf16 products on oneDNN " + onednn_isa() : "";
}

std::string sgemm_words(int threads, const std::string& products) {
  return "this machine's " + std::string(products.empty() ? "sgemm" : "bf16 GEMM") + " peak (" +
         (products.empty() ? "" : "oneDNN " + onednn_isa() + ", ") + std::to_string(kPeakSgemmN) + "³, " +
         std::to_string(threads) + " threads)";
}

}  // namespace

std::string format_gflops(double flops) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", flops / 1e9);
  return buf;
}

std::string peak_cache_path() {
  if (const char* p = std::getenv("FSDP_PEAK_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/fsdp-studio/peak-flops.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fsdp-studio/peak-flops.json";
}

std::string peak_cache_key(int threads, const std::string& products) {
  const DeviceProbe probe = probe_devices();
  std::ostringstream key;
  key << host_name() << " | " << probe.cpu.model_name << " | " << probe.cpu.logical_cores << " cores | " << threads
      << " threads | " << probe.blas_kernels.library << " | " << probe.blas_kernels.library_file << " | "
      << probe.blas_kernels.core << " kernels";
  if (!products.empty()) key << " | " << products;
  return key.str();
}

PeakFlops machine_peak_flops(Backend& be, double given) {
  if (given > 0) return {given, "given with --peak-flops: " + format_gflops(given), 0, ""};
  if (be.nominal_peak_flops() > 0) return datasheet_peak(be);
  const std::string path = peak_cache_path();
  const int threads = current_threads();
  const std::string products = products_of(be);
  const std::string key = peak_cache_key(threads, products);
  nlohmann::json cache = read_cache(path);
  const double now = unix_time();
  auto& machines = cache["machines"];
  if (machines.contains(key) && fresh(machines[key], now)) {
    const auto& e = machines[key];
    const double flops = e["flops"].get<double>(), measured = e["measured"].get<double>();
    std::string raised;
    if (e.contains("raised_by") && e["raised_by"].is_string())
      raised = ", raised by " + e["raised_by"].get<std::string>();
    return {flops,
            sgemm_words(threads, products) + ", measured " + day_of(measured) + raised + ", cached in " + path + ": " +
                format_gflops(flops),
            measured, key};
  }
  const SgemmSpeed s = measure_sgemm(be, kPeakSgemmN, kPeakSgemmRepeats);
  const std::string stored = record_sgemm_peak(s, threads, products);
  double flops = std::max(s.flops, s.cpu_flops);
  // Another process may have cached more in the meantime: the best reached counts.
  if (const nlohmann::json after = read_cache(path);
      after["machines"].contains(key) && fresh(after["machines"][key], now))
    flops = std::max(flops, after["machines"][key]["flops"].get<double>());
  const bool cached = stored.rfind("not cached", 0) != 0;
  return {flops, sgemm_words(threads, products) + ", measured now, " + stored + ": " + format_gflops(flops), now,
          cached ? key : ""};
}

std::string record_sgemm_peak(const SgemmSpeed& s, int threads, const std::string& products) {
  // By CPU time too: on a loaded machine the wall clock alone would understate the peak.
  const double flops = std::max(s.flops, s.cpu_flops);
  const std::string path = peak_cache_path();
  const std::string key = peak_cache_key(threads, products);
  try {
    nlohmann::json cache = read_cache(path);
    auto& machines = cache["machines"];
    const double now = unix_time();
    if (machines.contains(key) && fresh(machines[key], now)) {
      if (machines[key]["flops"].get<double>() >= flops)
        return "below the cached peak in " + path + " (" + format_gflops(machines[key]["flops"].get<double>()) + ")";
      raise_cached_peak(key, flops, "an sgemm measurement");
      return "raised the cached peak in " + path;
    }
    const DeviceProbe probe = probe_devices();
    machines[key] = {{"flops", flops},
                     {"wall_flops", s.flops},
                     {"cpu_flops", s.cpu_flops},
                     {"n", kPeakSgemmN},
                     {"repeats", kPeakSgemmRepeats},
                     {"threads", threads},
                     {"kernels", probe.blas_kernels.core},
                     {"library", probe.blas_kernels.library},
                     {"measured", now}};
    write_cache(path, cache);
    return "cached in " + path;
  } catch (const std::exception& e) {
    return "not cached: " + std::string(e.what());
  }
}

bool raise_cached_peak(const std::string& key, double flops, const std::string& by) {
  if (key.empty() || !(flops > 0)) return false;
  const std::string path = peak_cache_path();
  try {
    nlohmann::json cache = read_cache(path);
    auto& machines = cache["machines"];
    const double now = unix_time();
    if (!machines.contains(key) || !fresh(machines[key], now)) return false;  // measured afresh by the next run instead
    auto& e = machines[key];
    if (e["flops"].get<double>() >= flops) return false;
    e["raised_from"] = e["flops"];
    e["flops"] = flops;
    e["raised_by"] = by;
    e["raised_at"] = now;
    write_cache(path, cache);
    return true;
  } catch (const std::exception&) {
    return false;  // an unwritable cache: the run still measures against the raised peak
  }
}

}  // namespace fsdp
