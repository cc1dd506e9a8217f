#include "runtime/blas_kernels.h"

#include <dlfcn.h>
#include <limits.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>

extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

namespace fsdp {

namespace {

bool same_name(const std::string& a, const std::string& b) {
  return !a.empty() && strcasecmp(a.c_str(), b.c_str()) == 0;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

const char* kRefused = "refused:";

std::string library_config() {
  const char* c = openblas_get_config();
  return c ? c : "OpenBLAS (unknown build)";
}

std::string library_core() {
  const char* c = openblas_get_corename();
  return c ? c : "";
}

/** Only a DYNAMIC_ARCH build holds several kernel families and reads OPENBLAS_CORETYPE. */
bool library_chooses_at_run_time() {
  return library_config().find("DYNAMIC_ARCH") != std::string::npos;
}

std::string loaded_library_file() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&openblas_get_config), &info) || !info.dli_fname) return "";
  // The file itself, not the soname link: a new OpenBLAS behind the same link is another library.
  char real[PATH_MAX];
  return realpath(info.dli_fname, real) ? real : info.dli_fname;
}

const char* tier_words(int tier) {
  switch (tier) {
    case 4:
      return "AVX-512";
    case 3:
      return "AVX2/FMA";
    case 2:
      return "AVX";
    default:
      return "SSE";
  }
}

}  // namespace

KernelChoice choose_blas_core(const CpuFeatures& f) {
  if (f.vendor.empty()) return {"", "no cpuid on this CPU: OpenBLAS detects it itself"};
  if (f.usable_avx512()) {
    // Cooperlake's kernels differ from SkylakeX's only in bfloat16 products, which the CPU backend does not call.
    return {"SkylakeX", "AVX-512 runs here: OpenBLAS's SkylakeX kernels"};
  }
  if (f.usable_avx2_fma()) {
    const bool amd = f.vendor == "AuthenticAMD" || f.vendor == "HygonGenuine";
    return amd ? KernelChoice{"Zen", "AVX2 and FMA on an AMD CPU: OpenBLAS's Zen kernels"}
               : KernelChoice{"Haswell", "AVX2 and FMA: OpenBLAS's Haswell kernels"};
  }
  if (f.usable_avx()) return {"Sandybridge", "AVX without AVX2/FMA: OpenBLAS's Sandybridge kernels"};
  return {"", "no AVX: OpenBLAS's own detection (SSE kernels) is all there is"};
}

int kernel_tier(const std::string& core) {
  static const char* const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  static const char* const avx2[] = {"Haswell", "Zen"};
  static const char* const avx[] = {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator"};
  static const char* const sse[] = {"Prescott",   "Core2",     "Penryn",       "Dunnington", "Nehalem", "Atom",
                                    "Barcelona",  "Opteron",   "Opteron_SSE3", "Bobcat",     "Nano",    "Katmai",
                                    "Coppermine", "Northwood", "Banias",       "Athlon"};
  for (const char* n : avx512)
    if (same_name(core, n)) return 4;
  for (const char* n : avx2)
    if (same_name(core, n)) return 3;
  for (const char* n : avx)
    if (same_name(core, n)) return 2;
  for (const char* n : sse)
    if (same_name(core, n)) return 1;
  return -1;
}

int cpu_tier(const CpuFeatures& f) {
  if (f.vendor.empty()) return -1;
  if (f.usable_avx512()) return 4;
  if (f.usable_avx2_fma()) return 3;
  if (f.usable_avx()) return 2;
  return 1;
}

nlohmann::json BlasKernels::to_json() const {
  return {{"library", library},
          {"library_file", library_file},
          {"kernels", core},
          {"chosen", chosen},
          {"set_by", set_by},
          {"cpu", cpu},
          {"kernels_tier", kernels_tier},
          {"cpu_tier", cpu_tier},
          {"slow", slow},
          {"note", note}};
}

BlasKernels current_blas_kernels() {
  const CpuFeatures f = read_cpu_features();
  const KernelChoice choice = choose_blas_core(f);
  BlasKernels k;
  k.library = library_config();
  k.library_file = loaded_library_file();
  k.core = library_core();
  k.chosen = choice.core;
  k.cpu = describe_cpu_features(f);
  const std::string forced = env(kOpenBlasCoreTypeVar), marker = env(kBlasChoiceVar);
  const int have = kernel_tier(k.core), can = cpu_tier(f);
  k.kernels_tier = have;
  k.cpu_tier = can;
  k.slow = have >= 0 && can > have;
  const std::string kernels = "OpenBLAS's " + (k.core.empty() ? std::string("default") : k.core) + " kernels";
  std::string fix;
  if (!forced.empty() && forced == marker) {
    k.set_by = "runtime";
    k.note = kernels + ", chosen by the runtime for " + k.cpu + " (" + choice.why + ")";
  } else if (!forced.empty()) {
    k.set_by = "environment";
    k.note = kernels + ", as OPENBLAS_CORETYPE=" + forced + " in the environment asks";
    fix = "unset OPENBLAS_CORETYPE and the runtime chooses" + (choice.core.empty() ? std::string() : " " + choice.core);
  } else {
    k.set_by = "library";
    if (marker.rfind(kRefused, 0) == 0) {
      k.note = kernels + ": this OpenBLAS has no " + marker.substr(std::strlen(kRefused)) +
               " kernels, so it detected the CPU itself";
      fix = "install a newer OpenBLAS (Debian's libopenblas0-openmp)";
    } else if (!library_chooses_at_run_time()) {
      k.note = kernels + ": this OpenBLAS is built for them alone (no DYNAMIC_ARCH), so the runtime cannot choose";
      fix = "install an OpenBLAS built with DYNAMIC_ARCH (Debian's libopenblas0-openmp is)";
    } else if (same_name(k.core, choice.core)) {
      k.note = kernels + ": OpenBLAS's own detection, the runtime's choice for " + k.cpu;
    } else {
      k.note = kernels + ": OpenBLAS's own detection for " + k.cpu + " (" + choice.why + ")";
    }
  }
  if (k.slow) {
    k.note += ". A known-slow path: this CPU runs " + std::string(tier_words(can)) + " kernels, and " +
              tier_words(have) + " ones make matrix products up to ~5x slower" + (fix.empty() ? "" : "; " + fix);
  }
  return k;
}

bool put_blas_choice_in_environment() {
  const std::string forced = env(kOpenBlasCoreTypeVar), marker = env(kBlasChoiceVar);
  if (!marker.empty()) {
    // Started again by this runtime. A name the library did not know leaves it on Prescott's
    // kernels (OpenBLAS falls back to those), so it is taken out and OpenBLAS detects the CPU.
    if (!forced.empty() && forced == marker && !same_name(library_core(), marker)) {
      setenv(kBlasChoiceVar, (kRefused + marker).c_str(), 1);
      unsetenv(kOpenBlasCoreTypeVar);
      return true;
    }
    return false;
  }
  if (!forced.empty()) return false;  // the person's choice
  if (!library_chooses_at_run_time()) return false;
  const KernelChoice choice = choose_blas_core(read_cpu_features());
  if (choice.core.empty() || same_name(library_core(), choice.core)) return false;  // OpenBLAS got it right
  setenv(kOpenBlasCoreTypeVar, choice.core.c_str(), 1);
  setenv(kBlasChoiceVar, choice.core.c_str(), 1);
  return true;
}

}  // namespace fsdp
