// What this CPU can execute, read from the processor itself (cpuid and xgetbv), not from its model
// name: cloud machines often mask the name ("Intel(R) Xeon(R) Processor"), and a BLAS that
// identifies the CPU by name then falls back to its oldest kernels (runtime/blas_kernels.h).
#pragma once
#include <string>

namespace fsdp {

struct CpuFeatures {
  std::string vendor;  // cpuid's vendor string: "GenuineIntel", "AuthenticAMD", "HygonGenuine"; empty off x86
  int family = 0;      // display family (base + extended), e.g. 6 for Intel cores, 0x19 for AMD Zen 3/4
  int model = 0;       // display model (base + extended)
  bool sse3 = false, avx = false, fma = false, avx2 = false;
  bool avx512f = false, avx512dq = false, avx512cd = false, avx512bw = false, avx512vl = false, avx512_bf16 = false;
  bool os_saves_ymm = false;  // the OS saves AVX state (XCR0 bits 1-2): AVX instructions may be used
  bool os_saves_zmm = false;  // ... and AVX-512 state (XCR0 bits 5-7)

  /** AVX2 and FMA, with the OS saving their registers. */
  bool usable_avx2_fma() const { return avx2 && fma && os_saves_ymm; }
  /** The AVX-512 subsets OpenBLAS's SkylakeX kernels use (F, DQ, CD, BW, VL), with the OS saving them. */
  bool usable_avx512() const {
    return avx512f && avx512dq && avx512cd && avx512bw && avx512vl && os_saves_ymm && os_saves_zmm;
  }
  bool usable_avx() const { return avx && os_saves_ymm; }
};

/**
 * This CPU's features (all false where there is no cpuid: not x86), less those named in
 * $FSDP_CPU_FEATURES_HIDE (comma-separated: avx512, avx512_bf16, avx2, fma, avx): features can be
 * hidden, never added, so the runtime never picks kernels the CPU cannot run. Tests use it to make
 * the runtime choose other kernels than OpenBLAS would; people, to rule kernels out.
 */
CpuFeatures read_cpu_features();

/** `f` without the features named in `hide` (as $FSDP_CPU_FEATURES_HIDE); unknown names are listed in `unknown`. */
CpuFeatures hide_cpu_features(CpuFeatures f, const std::string& hide, std::string* unknown = nullptr);

/** "GenuineIntel family 6 model 143: AVX-512 (BF16), AVX2, FMA" — what the kernel choice was made from. */
std::string describe_cpu_features(const CpuFeatures& f);

}  // namespace fsdp
