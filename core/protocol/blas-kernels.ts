// What the native runtime says of its BLAS (fsdp-train-native --probe's blas_kernels, and run_start's
// runtime.blas_kernels), as the editor's Check environment and the tests read it.
/** The OpenBLAS kernels a process runs and how they were chosen (native/src/runtime/blas_kernels.h). */
export interface BlasKernels {
  library: string;
  library_file: string;
  /** OpenBLAS's core type in use, e.g. "SkylakeX", "Zen", "Prescott". */
  kernels: string;
  /** The runtime's choice for this CPU (empty: OpenBLAS's own detection). */
  chosen: string;
  set_by: 'runtime' | 'environment' | 'library';
  cpu: string;
  kernels_tier: number;
  cpu_tier: number;
  /** Kernels below what the CPU runs: a known-slow path. */
  slow: boolean;
  /** One sentence for people. */
  note: string;
}

/**
 * Which GEMM the CPU backend's matrix products run (--probe's cpu_gemm.float32 / .bfloat16, and
 * run_start's runtime.gemm: native/src/backend/cpu/bf16_gemm.h): OpenBLAS in float32, or oneDNN's
 * bf16 GEMM (bf16 operands, float32 accumulation and output) on mixed_precision.param_dtype bfloat16.
 */
export interface CpuGemm {
  /** "OpenBLAS", or "oneDNN 2.6.3". */
  library: string;
  dtype: 'float32' | 'bfloat16';
  /** oneDNN's instruction set on this CPU, e.g. "avx512_core_amx" (bf16 only). */
  isa?: string;
  note: string;
  /** Whether bf16 products run with this build on this CPU; else bf16_refusal says why. */
  bf16_available: boolean;
  bf16_refusal?: string;
}
