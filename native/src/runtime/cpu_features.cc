#include "runtime/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FSDP_HAS_CPUID 1
#else
#define FSDP_HAS_CPUID 0
#endif

namespace fsdp {

#if FSDP_HAS_CPUID
namespace {

/** XCR0, the register states the OS saves on a context switch (needs OSXSAVE). */
unsigned long long read_xcr0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

}  // namespace
#endif

CpuFeatures hide_cpu_features(CpuFeatures f, const std::string& hide, std::string* unknown) {
  std::istringstream names(hide);
  std::string name;
  while (std::getline(names, name, ',')) {
    if (name.empty()) continue;
    if (name == "avx512")
      f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = f.avx512_bf16 = false;
    else if (name == "avx512_bf16")
      f.avx512_bf16 = false;
    else if (name == "avx2")
      f.avx2 = false;
    else if (name == "fma")
      f.fma = false;
    else if (name == "avx")
      f.avx = f.avx2 = f.fma = f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = f.avx512_bf16 = false;
    else if (unknown)
      *unknown += (unknown->empty() ? "" : ", ") + name;
  }
  return f;
}

namespace {

CpuFeatures read_from_cpuid() {
  CpuFeatures f;
#if FSDP_HAS_CPUID
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return f;
  const unsigned max_leaf = eax;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  f.vendor = vendor;
  if (max_leaf < 1) return f;
  __cpuid(1, eax, ebx, ecx, edx);
  const int base_family = (eax >> 8) & 0xf, base_model = (eax >> 4) & 0xf;
  const int ext_family = (eax >> 20) & 0xff, ext_model = (eax >> 16) & 0xf;
  f.family = base_family == 0xf ? base_family + ext_family : base_family;
  f.model = base_family == 0x6 || base_family == 0xf ? (ext_model << 4) + base_model : base_model;
  f.sse3 = ecx & (1u << 0);
  f.fma = ecx & (1u << 12);
  f.avx = ecx & (1u << 28);
  const bool osxsave = ecx & (1u << 27);
  if (osxsave) {
    const unsigned long long xcr0 = read_xcr0();
    f.os_saves_ymm = (xcr0 & 0x6) == 0x6;
    f.os_saves_zmm = (xcr0 & 0xe0) == 0xe0;
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned max_subleaf = eax;
    f.avx2 = ebx & (1u << 5);
    f.avx512f = ebx & (1u << 16);
    f.avx512dq = ebx & (1u << 17);
    f.avx512cd = ebx & (1u << 28);
    f.avx512bw = ebx & (1u << 30);
    f.avx512vl = ebx & (1u << 31);
    if (max_subleaf >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      f.avx512_bf16 = eax & (1u << 5);
    }
  }
#endif
  return f;
}

}  // namespace

CpuFeatures read_cpu_features() {
  const char* hide = std::getenv("FSDP_CPU_FEATURES_HIDE");
  if (!hide || !*hide) return read_from_cpuid();
  std::string unknown;
  const CpuFeatures f = hide_cpu_features(read_from_cpuid(), hide, &unknown);
  static bool told = false;
  if (!unknown.empty() && !told) {
    told = true;
    std::fprintf(stderr,
                 "fsdp-train-native: FSDP_CPU_FEATURES_HIDE names features it does not know: %s (known: avx512, "
                 "avx512_bf16, avx2, fma, avx)\n",
                 unknown.c_str());
  }
  return f;
}

std::string describe_cpu_features(const CpuFeatures& f) {
  if (f.vendor.empty()) return "a CPU without cpuid (not x86)";
  std::vector<std::string> have;
  if (f.usable_avx512())
    have.push_back(f.avx512_bf16 ? "AVX-512 (BF16)" : "AVX-512");
  else if (f.avx512f)
    have.push_back("AVX-512 (not usable: the OS does not save its registers, or subsets are missing)");
  if (f.avx2) have.push_back("AVX2");
  if (f.fma) have.push_back("FMA");
  if (have.empty() && f.avx) have.push_back("AVX");
  if (have.empty() && f.sse3) have.push_back("SSE3");
  if ((f.avx || f.avx2) && !f.os_saves_ymm) have.push_back("(the OS does not save AVX registers)");
  char head[96];
  std::snprintf(head, sizeof head, "%s family 0x%x model 0x%x", f.vendor.c_str(), f.family, f.model);
  std::string out = head;
  for (std::size_t i = 0; i < have.size(); ++i) out += (i == 0 ? ": " : ", ") + have[i];
  return out;
}

}  // namespace fsdp
