// The runtime's choice of OpenBLAS kernels (runtime/blas_kernels.h): from planted CPU features,
// only kernels the CPU runs, the best of those; and the kernels this process runs on are the ones
// it was meant to (the runtime's choice, or OPENBLAS_CORETYPE / FSDP_EXPECT_BLAS_KERNELS when a
// test forces others: test/native/blas-kernels.test.ts runs this binary under each).
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>

#include "runtime/blas_kernels.h"

extern "C" char* openblas_get_corename(void);

namespace fsdp {
namespace {

CpuFeatures intel() {
  CpuFeatures f;
  f.vendor = "GenuineIntel";
  f.family = 6;
  f.model = 0x8f;
  f.sse3 = true;
  return f;
}

CpuFeatures with_avx2(CpuFeatures f) {
  f.avx = f.avx2 = f.fma = f.os_saves_ymm = true;
  return f;
}

CpuFeatures with_avx512(CpuFeatures f) {
  f = with_avx2(f);
  f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = f.os_saves_zmm = true;
  return f;
}

TEST(BlasKernels, MaskedIntelWithAvx512GetsSkylakeX) {
  CpuFeatures f = with_avx512(intel());
  f.avx512_bf16 = true;  // the machine: "Intel(R) Xeon(R) Processor" with AVX-512 and AVX512-BF16
  EXPECT_EQ(choose_blas_core(f).core, "SkylakeX");
  EXPECT_EQ(cpu_tier(f), 4);
  EXPECT_EQ(describe_cpu_features(f), "GenuineIntel family 0x6 model 0x8f: AVX-512 (BF16), AVX2, FMA");
}

TEST(BlasKernels, Avx512TheOsDoesNotSaveIsNotUsed) {
  CpuFeatures f = with_avx512(intel());
  f.os_saves_zmm = false;
  EXPECT_EQ(choose_blas_core(f).core, "Haswell");
  EXPECT_EQ(cpu_tier(f), 3);
  f.os_saves_zmm = true;
  f.avx512bw = false;  // Xeon Phi's AVX-512 lacks BW/DQ/VL, which the SkylakeX kernels use
  EXPECT_EQ(choose_blas_core(f).core, "Haswell");
}

TEST(BlasKernels, Avx2AndFmaGetHaswellOnIntelAndZenOnAmd) {
  EXPECT_EQ(choose_blas_core(with_avx2(intel())).core, "Haswell");
  CpuFeatures amd = with_avx2(intel());
  amd.vendor = "AuthenticAMD";
  amd.family = 0x19;
  EXPECT_EQ(choose_blas_core(amd).core, "Zen");
  amd.vendor = "HygonGenuine";
  EXPECT_EQ(choose_blas_core(amd).core, "Zen");
  // AMD's AVX-512 (Zen 4) takes the SkylakeX kernels too.
  CpuFeatures zen4 = with_avx512(amd);
  zen4.vendor = "AuthenticAMD";
  EXPECT_EQ(choose_blas_core(zen4).core, "SkylakeX");
}

TEST(BlasKernels, OlderCpusGetAvxKernelsOrOpenBlasOwnDetection) {
  CpuFeatures avx_only = intel();
  avx_only.avx = avx_only.os_saves_ymm = true;
  EXPECT_EQ(choose_blas_core(avx_only).core, "Sandybridge");
  CpuFeatures no_fma = with_avx2(intel());
  no_fma.fma = false;
  EXPECT_EQ(choose_blas_core(no_fma).core, "Sandybridge");
  CpuFeatures avx_not_saved = with_avx2(intel());
  avx_not_saved.os_saves_ymm = false;
  EXPECT_EQ(choose_blas_core(avx_not_saved).core, "");
  EXPECT_EQ(choose_blas_core(intel()).core, "");
  EXPECT_EQ(choose_blas_core(CpuFeatures{}).core, "");  // no cpuid
  EXPECT_EQ(cpu_tier(CpuFeatures{}), -1);
}

TEST(BlasKernels, HidingFeaturesOnlyEverLowersTheChoice) {
  const CpuFeatures f = with_avx512(intel());
  std::string unknown;
  EXPECT_EQ(choose_blas_core(hide_cpu_features(f, "avx512", &unknown)).core, "Haswell");
  EXPECT_EQ(choose_blas_core(hide_cpu_features(f, "avx512,fma", &unknown)).core, "Sandybridge");
  EXPECT_EQ(choose_blas_core(hide_cpu_features(f, "avx", &unknown)).core, "");
  EXPECT_EQ(unknown, "");
  hide_cpu_features(f, "avx512,sse9", &unknown);
  EXPECT_EQ(unknown, "sse9");
  // Hiding on a CPU without the feature adds nothing.
  EXPECT_EQ(choose_blas_core(hide_cpu_features(intel(), "avx512_bf16", nullptr)).core, "");
}

TEST(BlasKernels, TiersOfOpenBlasCoreNames) {
  EXPECT_EQ(kernel_tier("SkylakeX"), 4);
  EXPECT_EQ(kernel_tier("cooperlake"), 4);
  EXPECT_EQ(kernel_tier("Zen"), 3);
  EXPECT_EQ(kernel_tier("HASWELL"), 3);
  EXPECT_EQ(kernel_tier("Sandybridge"), 2);
  EXPECT_EQ(kernel_tier("Prescott"), 1);
  EXPECT_EQ(kernel_tier("Nehalem"), 1);
  EXPECT_EQ(kernel_tier("SomethingNew"), -1);
  EXPECT_EQ(kernel_tier(""), -1);
}

TEST(BlasKernels, ThisProcessRunsTheKernelsItWasMeantTo) {
  const BlasKernels k = current_blas_kernels();
  const char* expected_env = std::getenv("FSDP_EXPECT_BLAS_KERNELS");
  const char* forced = std::getenv(kOpenBlasCoreTypeVar);
  std::string expected = expected_env ? expected_env : forced ? forced : k.chosen;
  if (expected.empty()) expected = k.core;  // no choice for this CPU: OpenBLAS's own detection
  EXPECT_EQ(strcasecmp(openblas_get_corename(), expected.c_str()), 0)
      << "OpenBLAS runs " << openblas_get_corename() << ", expected " << expected << "; " << k.note;
  EXPECT_EQ(k.core, openblas_get_corename());
  // Slow exactly when the kernels are below what the CPU runs.
  EXPECT_EQ(k.slow, kernel_tier(k.core) >= 0 && cpu_tier(read_cpu_features()) > kernel_tier(k.core)) << k.note;
  if (k.slow) EXPECT_NE(k.note.find("known-slow path"), std::string::npos) << k.note;
  std::printf("    BLAS kernels: %s\n", k.note.c_str());
}

}  // namespace
}  // namespace fsdp
