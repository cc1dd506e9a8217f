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

std::string gflops(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", f / 1e9);
  return buf;
}

std::string day_of(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  char buf[16];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  // A broken cache is measured over, never trusted or fatal.
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || j.value("v", 0) != 1 || !j.contains("machines") || !j["machines"].is_object()) return nlohmann::json::object();
  return j;
}

PeakFlops datasheet_peak(Backend& be) {
  const DeviceProbe probe = probe_devices();
  std::set<std::string> names;
  for (const auto& g : probe.gpus) names.insert(g.name);
  const std::string device = names.size() == 1 ? *names.begin() : "this GPU";
  return {be.nominal_peak_flops(), "datasheet peak of " + device + " in " + dtype_name(be.compute_dtype()) + " (dense): " + gflops(be.nominal_peak_flops()) + " GFLOP/s"};
}

}  // namespace

std::string peak_cache_path() {
  if (const char* p = std::getenv("FSDP_PEAK_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/fsdp-studio/peak-flops.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fsdp-studio/peak-flops.json";
}

std::string peak_cache_key(int threads) {
  const DeviceProbe probe = probe_devices();
  std::ostringstream key;
  key << host_name() << " | " << probe.cpu.model_name << " | " << probe.cpu.logical_cores << " cores | " << threads << " threads | " << probe.blas;
  return key.str();
}

PeakFlops machine_peak_flops(Backend& be, double given) {
  if (given > 0) return {given, "given with --peak-flops: " + gflops(given) + " GFLOP/s"};
  if (be.nominal_peak_flops() > 0) return datasheet_peak(be);
  const std::string path = peak_cache_path();
  const std::string key = peak_cache_key(current_threads());
  nlohmann::json cache = read_cache(path);
  const double now = unix_time();
  if (cache.contains("machines") && cache["machines"].contains(key)) {
    const auto& e = cache["machines"][key];
    const double flops = e.value("flops", 0.0), measured = e.value("measured", 0.0);
    if (flops > 0 && now - measured < kPeakCacheMaxAgeDays * 86400.0) {
      return {flops, "this machine's sgemm peak (" + std::to_string(kPeakSgemmN) + "³, " + std::to_string(current_threads()) + " threads), measured " +
                         day_of(measured) + ", cached in " + path + ": " + gflops(flops) + " GFLOP/s"};
    }
  }
  const SgemmSpeed s = measure_sgemm(be, kPeakSgemmN, kPeakSgemmRepeats);
  // By CPU time too: on a loaded machine the wall clock alone would understate the peak.
  const double flops = std::max(s.flops, s.cpu_flops);
  std::string stored = ", cached in " + path;
  try {
    if (!cache.is_object() || !cache.contains("machines")) cache = {{"v", 1}, {"machines", nlohmann::json::object()}};
    cache["machines"][key] = {{"flops", flops}, {"wall_flops", s.flops}, {"cpu_flops", s.cpu_flops}, {"n", kPeakSgemmN},
                              {"repeats", kPeakSgemmRepeats}, {"threads", current_threads()}, {"measured", now}};
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_file_atomically(path, cache.dump(2) + "\n");
  } catch (const std::exception& e) {
    stored = " (not cached: " + std::string(e.what()) + ")";
  }
  return {flops, "this machine's sgemm peak (" + std::to_string(kPeakSgemmN) + "³, " + std::to_string(current_threads()) + " threads), measured now" + stored +
                     ": " + gflops(flops) + " GFLOP/s"};
}

}  // namespace fsdp
