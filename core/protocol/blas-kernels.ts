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
