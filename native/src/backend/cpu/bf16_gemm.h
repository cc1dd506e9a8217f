// The CPU backend's bf16 matrix products, for mixed_precision.param_dtype: bfloat16 on
// launch.device: cpu. Every product of the step rounds its two float32 operands to bf16 (nearest
// even) and runs oneDNN's bf16 GEMM, which accumulates in float32 and writes float32 — what
// PyTorch's CPU autocast does for matmuls. Weights, gradients, activations, norms, softmax, the
// loss and AdamW all stay float32: the CPU keeps no bf16 copy of the weights, only each product's
// rounded operands, in buffers each thread reuses (bf16_operand_bytes).
//
// Why oneDNN, and only where measured faster than float32: at this model's GEMM shapes oneDNN 2.6's
// bf16 GEMM on AMX tiles took 3-3.5x less CPU time than float32 OpenBLAS, rounding included; on an
// Intel CPU's AVX512-BF16 alone it took 1.5x more (bench/results/blas-bf16-intel-avx512-2026-12-07.md);
// on AMD Zen 4's AVX512-BF16 (no AMX) 1.7-1.9x less, and a whole GPT-2 T 128 step 1.89x less
// (blas-bf16-amd-avx512-2026-12-08.md, cpu-bf16-native-amd-avx512-2026-12-08.md). Any other CPU is
// refused unless FSDP_CPU_BF16_WITHOUT_AMX=1 says to run anyway.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/cpu_features.h"

namespace fsdp {

/** The environment variable that runs bf16 on a CPU without AMX-BF16 where it was not measured faster than float32. */
constexpr const char* kCpuBf16WithoutAmxVar = "FSDP_CPU_BF16_WITHOUT_AMX";

/** Whether this build links oneDNN (CMake found Debian's libdnnl-dev). */
bool onednn_built();

/** oneDNN's best instruction set on this CPU ("avx512_core_amx", ...); "" without oneDNN. */
std::string onednn_isa();

/**
 * Whether this CPU's AVX512-BF16, without AMX tiles, was measured faster than float32 OpenBLAS at
 * this model's products (above): AMD Zen 4, family 0x19 with AVX512-BF16 and usable AVX-512. Not an
 * Intel CPU (0.66x), nor one never measured (Zen 5, family 0x1a, included).
 */
bool bf16_without_amx_measured_faster(const CpuFeatures& f);

/** Why bf16 products cannot run on this CPU with this build ("" when they can). */
std::string cpu_bf16_refusal();

/**
 * Which GEMM the CPU backend runs, for --probe, run_start and Check environment:
 * {"library", "dtype", "isa"?, "note"}; with `bf16` false OpenBLAS's float32 sgemm, with `bf16` true
 * oneDNN's bf16 GEMM. `bf16_available`/`bf16_refusal` say whether bf16 could run here.
 */
nlohmann::json cpu_gemm_json(bool bf16);

/** Rounds n floats to bf16, nearest even (AVX512-BF16's vcvtneps2bf16 where the build has it). */
void round_to_bf16(std::uint16_t* dst, const float* src, std::size_t n);

/**
 * C[m, n] = alpha op(A) op(B) + beta C, row-major, with A and B rounded to bf16 and the sum in
 * float32. May be called from inside an OpenMP loop (the attention kernels): it then rounds and
 * multiplies on the calling thread. Throws where cpu_bf16_refusal() is not empty.
 */
void gemm_bf16(bool ta, bool tb, long m, long n, long k, float alpha, const float* a, long lda, const float* b,
               long ldb, float beta, float* c, long ldc);

/**
 * The most elements of one operand rounded at a time: a larger product runs as pieces (split along
 * m, n or k, accumulating in float32), so that the classifier's products (N x V, V x C) do not
 * hold a bf16 copy of their whole operands. 4 Mi elements keeps each piece large for AMX.
 */
constexpr std::uint64_t kBf16OperandElements = std::uint64_t{1} << 22;

/**
 * The most bytes of rounded operands a thread holds: two operands of at most kBf16OperandElements
 * bf16 each (16 MiB). The thread that calls the step's products holds up to this; the attention
 * loop's threads hold their own (batch, head) operands, T x T and T x D, each capped the same way.
 */
constexpr std::uint64_t kBf16OperandBytesPerThread = 2 * 2 * kBf16OperandElements;

/** The bytes of bf16 operand buffers this process holds now, all threads together. */
std::uint64_t bf16_operand_bytes_held();

}  // namespace fsdp
