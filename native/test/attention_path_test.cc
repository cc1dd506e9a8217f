// Which kernels a CUDA attention call runs on (backend/cuda/kernels/attention_path.h), checked on
// any machine: bfloat16 and float16 at head sizes 32, 64 and 128 take the tensor cores; float32, an
// uncompiled head size, too many sequence-heads for the grid, and a misaligned tensor fall back to
// the CUDA cores, each with its reason; the name the run's start event gives says which. The GPU
// tests (native/test/cuda/attention_kernel_test.cc) count the calls that really ran on each path.
#include <gtest/gtest.h>

#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/kernels/attention_path.h"

namespace fsdp::test {
namespace {

using cuda::attention_path;
using cuda::AttentionPath;

TEST(AttentionPath, SixteenBitTypesTakeTheTensorCoresAtEveryCompiledHeadSize) {
  alignas(16) static char buffer[64];
  for (DType t : {DType::bf16, DType::f16})
    for (long D : {32L, 64L, 128L}) {
      const auto c = attention_path(t, D * 12, 12, 48, {buffer, buffer + 16, buffer + 32});
      EXPECT_EQ(c.path, AttentionPath::tensor_cores) << dtype_name(t) << " head size " << D << ": " << c.reason;
      EXPECT_STREQ(c.reason, "");
    }
}

TEST(AttentionPath, EveryFallbackToTheCudaCoresHasItsReason) {
  alignas(16) static char buffer[64];
  struct Case {
    DType t;
    long C, H, B;
    const void* p;
    const char* reason;
  };
  for (const Case& k : {Case{DType::f32, 768, 12, 8, nullptr, "float32 has no tensor-core attention"},
                        Case{DType::bf16, 960, 12, 8, nullptr, "head size not compiled"},
                        Case{DType::bf16, 768, 12, 5462, nullptr, "more than 65535 sequence-heads"},
                        Case{DType::f16, 768, 12, 8, buffer + 2, "not 16-byte aligned"},
                        Case{DType::bf16, 768, 0, 8, nullptr, "not a multiple of n_heads"}}) {
    const auto c = attention_path(k.t, k.C, k.H, k.B, {buffer, k.p});
    EXPECT_EQ(c.path, AttentionPath::cuda_cores) << k.reason;
    EXPECT_NE(std::string(c.reason).find(k.reason), std::string::npos) << c.reason;
  }
  // 65535 sequence-heads still fit the grid.
  EXPECT_EQ(attention_path(DType::bf16, 64 * 5, 5, 13107).path, AttentionPath::tensor_cores);
}

TEST(AttentionPath, TheRunStartNamesThePathAndTheCpuItsOwnKernels) {
  EXPECT_EQ(cuda::attention_path_name(DType::bf16, 768, 12, 48),
            "tensor cores (mma.sync m16n8k16, bfloat16, head size 64)");
  EXPECT_EQ(cuda::attention_path_name(DType::f32, 768, 12, 48),
            "CUDA cores (float32, head size 64: float32 has no tensor-core attention (no TF32 variant))");
  CpuBackend cpu;
  EXPECT_EQ(cpu.attention_kernels(8, 768, 12), "cpu kernels (float32)");
}

}  // namespace
}  // namespace fsdp::test
