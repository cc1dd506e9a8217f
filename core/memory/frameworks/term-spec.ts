// What a framework's memory model hands to the estimator, in one of two shapes:
// - terms with the bytes live at the end of forward, during backward (as a function of how far
//   backward has got) and at the optimizer step (our runtime's plan, DeepSpeed's formulas);
// - or each phase's highest moment, already found by replaying the run (PyTorch), with the caching
//   allocator's own peaks.
import type { MemoryCategory, Phase } from '../memory-estimate';

export interface TermInfo {
  id: string;
  category: MemoryCategory;
  label: string;
  where: 'device' | 'host';
  /** Memory the framework's allocator does not see (CUDA context, NCCL's buffers). */
  outsideAllocator?: boolean;
}

export interface TermSpec extends TermInfo {
  forward: number;
  /**
   * Bytes during backward at `step`: step 0 is the loss and LM head, step j (1…n_layers) is the
   * backward of block n_layers − j. A number means the same at every step.
   */
  backward: number | ((step: number) => number);
  optimizer: number;
}

export interface FrameworkTerms {
  terms: TermSpec[];
  /** Backward steps to examine: n_layers + 1. */
  backwardSteps: number;
  /** Caching-allocator fragmentation as a fraction of allocated bytes (0 for exact plans). */
  fragmentation: number;
  notes: string[];
  /**
   * Where the terms are not held to a GPU measurement: why, and bytes the peak may exceed them by beyond the
   * fragmentation margin. The range runs from the tensors alone (no margin) to the peak plus the margin once
   * more and `above` (estimate.ts fromTermSpecs).
   */
  unsure?: { why: string; above: number };
}

export interface FrameworkUnsure {
  why: string;
  below: number;
  above: number;
}

export interface FrameworkMoments {
  terms: TermInfo[];
  /** Per phase, the bytes of each term (same order as `terms`) at its highest moment, and the allocator's own total then. */
  phasePeaks: Record<Phase, { bytes: number[]; allocated: number }>;
  /** Device bytes at every moment examined (requested sizes plus what is outside the allocator); each is affine in the micro-batch. */
  momentTotals: number[];
  /** The caching allocator replay's max_memory_allocated and max_memory_reserved, and its largest segment (GPU only). */
  allocator?: { allocatedPeak: number; reservedPeak: number; largestSegment: number };
  /** Offloaded bytes in host memory at their highest. */
  hostPeak: number;
  notes: string[];
  /** As FrameworkTerms.unsure, for a framework without an allocator replay. */
  unsure?: FrameworkUnsure;
}

/** A term with the same bytes in every phase. */
export function constantTerm(
  id: string,
  category: MemoryCategory,
  label: string,
  bytes: number,
  where: 'device' | 'host' = 'device',
): TermSpec {
  return { id, category, label, where, forward: bytes, backward: bytes, optimizer: bytes };
}
