// MFU's denominator: the peak FLOP/s one rank's device can reach. On GPUs the datasheet's dense
// peak in the compute dtype; on CPUs this machine's own sgemm peak — measured, not looked up, as
// `fsdp-train-native --sgemm-peak` and `npm run bench:cpu` do (2048³ products, the best of several,
// by the wall clock and by CPU time so a loaded machine does not lower it), and cached per machine
// so a run does not spend a second on it each time. Never below what a run achieves, but by noise.
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
/** A cached CPU peak older than this is measured again (BIOS, governor or kernel changes). */
constexpr double kPeakCacheMaxAgeDays = 30;

struct PeakFlops {
  double flops = 0;
  /** Where it comes from, in words, for the run_start event and the dashboard's tooltip. */
  std::string source;
};

/**
 * The peak for MFU on this rank's backend: `given` (--peak-flops) when positive, else the
 * backend's datasheet peak (GPUs), else this machine's sgemm peak from the cache file
 * (peak_cache_path()), measured and stored there when the cache has no fresh entry for this
 * machine: host, CPU model, logical cores, threads and BLAS build.
 */
PeakFlops machine_peak_flops(Backend& be, double given);

/** $FSDP_PEAK_CACHE, else $XDG_CACHE_HOME/fsdp-studio/peak-flops.json, else ~/.cache/fsdp-studio/peak-flops.json. */
std::string peak_cache_path();

/** What identifies the machine's sgemm peak: a change in any part invalidates the cached value. */
std::string peak_cache_key(int threads);

}  // namespace fsdp
