// Which OpenBLAS kernels the CPU backend's matrix products run, chosen by the runtime from the
// CPU's own features (runtime/cpu_features.h) rather than left to OpenBLAS's detection.
//
// Why: OpenBLAS (0.3.21, Debian 12's) identifies x86 CPUs by family and model number, and a CPU it
// does not know (a newer model, or a cloud VM that masks it as "Intel(R) Xeon(R) Processor")
// gets its oldest 64-bit kernels, Prescott's SSE3: on such a VM with AVX-512, sgemm ran at 64
// GFLOP/s instead of 303 with the SkylakeX kernels, and a training step took 4× as long. Its
// DYNAMIC_ARCH build takes a core type from OPENBLAS_CORETYPE when it initialises — before main()
// — so the runtime puts its choice there and runs itself again (runtime/process_start.h).
// Another BLAS from Debian (BLIS 0.9) was measured and not taken: half OpenBLAS's sgemm speed on a
// Zen 3 machine, and it too needs the model name to use its AVX-512 kernels (docs in
// native/README.md, "BLAS kernels").
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/cpu_features.h"

namespace fsdp {

/** The runtime's choice for a CPU: an OpenBLAS core type, or none (OpenBLAS's own detection is as good). */
struct KernelChoice {
  std::string core;  // OpenBLAS's name: "SkylakeX", "Zen", "Haswell", "Sandybridge"; empty: no choice
  std::string why;
};

/** The kernels for these features. Only kernels whose instructions the CPU (and its OS) runs. */
KernelChoice choose_blas_core(const CpuFeatures& f);

/** How much of the vector hardware an OpenBLAS core type's kernels use: 1 SSE, 2 AVX, 3 AVX2+FMA, 4 AVX-512; -1 a name
 * this table does not know. */
int kernel_tier(const std::string& core);
/** The highest tier this CPU runs (-1 without cpuid). */
int cpu_tier(const CpuFeatures& f);

/** The environment variables involved: OpenBLAS's, and the runtime's note of what it put there. */
constexpr const char* kOpenBlasCoreTypeVar = "OPENBLAS_CORETYPE";
constexpr const char* kBlasChoiceVar = "FSDP_BLAS_CHOICE";

/** What the matrix products of this process run on, and how that came about. */
struct BlasKernels {
  std::string library;       // openblas_get_config(): version and build options
  std::string library_file;  // the shared library the process loaded
  std::string core;          // the kernels OpenBLAS uses: openblas_get_corename()
  std::string chosen;        // the runtime's choice for this CPU (empty: none)
  std::string
      set_by;  // "runtime", "environment" (OPENBLAS_CORETYPE set by the person) or "library" (OpenBLAS's detection)
  std::string cpu;        // describe_cpu_features()
  int kernels_tier = -1;  // kernel_tier(core)
  int cpu_tier = -1;      // cpu_tier(): the best this CPU runs
  bool slow = false;      // kernels below what the CPU runs: a known-slow path
  std::string note;       // one sentence for people: what, why, and for a slow path what to do

  nlohmann::json to_json() const;
};

/** This process's kernels, from OpenBLAS's live state, the CPU and the environment. */
BlasKernels current_blas_kernels();

/**
 * Called first in main(), before any matrix product: puts the runtime's choice in the environment
 * (OPENBLAS_CORETYPE, noted in FSDP_BLAS_CHOICE). Returns true when OpenBLAS, already initialised
 * with other kernels, needs the process to start again for the choice to apply. A person's own
 * OPENBLAS_CORETYPE is left alone; a name the library turns down is taken out again.
 */
bool put_blas_choice_in_environment();

}  // namespace fsdp
