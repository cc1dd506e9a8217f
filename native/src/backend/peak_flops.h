// MFU's denominator: the peak FLOP/s one rank's device can reach. On GPUs the datasheet's dense
// peak in the compute dtype; on CPUs the best this machine's BLAS, with these kernels and this
// many threads, has reached: sgemm measured as `fsdp-train-native --sgemm-peak` and `npm run
// bench:cpu` do (2048³ products, the best of several, by the wall clock and by CPU time so a loaded
// machine lowers it less), cached per machine so a run does not spend a second on it each time.
//
// The rules that keep MFU at or below 100% (issue 24), each checked by test/native/peak-flops.test.ts:
//  - The cache entry is keyed by host, CPU, cores, threads, the BLAS library (its build, its file)
//    and the kernels it runs: a change in any is a new entry, measured afresh. A CPU run whose
//    products are bf16 (oneDNN's GEMM, ~3x sgemm on AMX) has its own entry, measured with those
//    products, so that it neither raises float32 runs' peak nor is held to it.
//  - An entry is measured again a week after its measurement (kPeakCacheMaxAgeDays).
//  - Anything that goes faster than the cached peak on the same key raises it: a run's step (the
//    model's FLOP/s) or a new sgemm measurement. The run says so (a log event, and the step event
//    carries the new peak_flops) and measures MFU against the raised peak from then on.
//  - So a step's MFU is never above 1.
#pragma once
#include <string>

#include "backend/backend.h"

namespace fsdp {

struct SgemmSpeed {
  double flops = 0;      // best FLOP/s by the wall clock
  double cpu_flops = 0;  // best FLOP per CPU-second, times the threads: the peak on an unloaded machine
};

/** Best speed of `repeats` n x n x n float32 matrix products on the backend. */
SgemmSpeed measure_sgemm(Backend& be, long n = 1024, int repeats = 3);

/** The size and repeats of the peak measurement (those of `--sgemm-peak` and bench:cpu). */
constexpr long kPeakSgemmN = 2048;
constexpr int kPeakSgemmRepeats = 5;
/** A cached CPU peak older than this is measured again (BIOS, governor, kernel or VM changes). */
constexpr double kPeakCacheMaxAgeDays = 7;

struct PeakFlops {
  double flops = 0;
  /** Where it comes from, in words, for the run_start event and the dashboard's tooltip. */
  std::string source;
  /** When the value was measured (Unix seconds); 0 for a datasheet's or a given peak. */
  double measured = 0;
  /** The cache entry it came from or went to: empty when not cached (datasheet, given, not writable). */
  std::string cache_key;
};

/**
 * The peak for MFU on this rank's backend: `given` (--peak-flops) when positive, else the
 * backend's datasheet peak (GPUs), else this machine's sgemm peak from the cache file
 * (peak_cache_path()), measured and stored there when the cache has no fresh entry for this key.
 */
PeakFlops machine_peak_flops(Backend& be, double given);

/**
 * `flops` was reached on this machine by `by` ("run R at step N", "--sgemm-peak"): when it is
 * above the entry cached under `key`, the entry is raised to it (its measurement date kept).
 * Returns true when raised; false when the cache already held as much, or cannot be written.
 */
bool raise_cached_peak(const std::string& key, double flops, const std::string& by);

/**
 * Stores an sgemm measurement (kPeakSgemmN³ with `threads` threads; `products` as in peak_cache_key) in the cache: a
 * new entry when there is no fresh one for this machine, else it raises the entry when faster. Says what it did:
 * "cached in PATH", "raised the cached peak in PATH", "below the cached peak in PATH (…)" or "not cached: why".
 */
std::string record_sgemm_peak(const SgemmSpeed& s, int threads, const std::string& products = "");

/** $FSDP_PEAK_CACHE, else $XDG_CACHE_HOME/fsdp-studio/peak-flops.json, else ~/.cache/fsdp-studio/peak-flops.json. */
std::string peak_cache_path();

/**
 * What identifies the machine's sgemm peak: a change in any part invalidates the cached value.
 * `products` names matrix products other than float32 sgemm ("bf16 products on oneDNN ISA"), "" for sgemm.
 */
std::string peak_cache_key(int threads, const std::string& products = "");

/** "123.4 GFLOP/s". */
std::string format_gflops(double flops);

}  // namespace fsdp
