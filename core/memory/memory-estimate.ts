// What an estimate says: per rank, bytes per category at each phase's peak, the largest phase,
// host memory, the fit verdict, and every term with its own label so a front end can explain it.
import type { GpuSpec } from './gpu-presets';
import type { CheckpointPolicy, MemoryInput } from './memory-input';

export type MemoryCategory = 'params' | 'grads' | 'optimizer' | 'activations' | 'workspace' | 'comm' | 'other';
export const MEMORY_CATEGORIES: readonly MemoryCategory[] = [
  'params',
  'grads',
  'optimizer',
  'activations',
  'workspace',
  'comm',
  'other',
];

/** End of forward, backward (its highest point), optimizer step. */
export type Phase = 'forward' | 'backward' | 'optimizer';
export const PHASES: readonly Phase[] = ['forward', 'backward', 'optimizer'];

/** One quantity of memory with its reason, e.g. "gathered parameters of two blocks in flight". */
export interface MemoryTerm {
  id: string;
  category: MemoryCategory;
  label: string;
  /** Bytes live at the peak moment of each phase. */
  bytes: Record<Phase, number>;
  where: 'device' | 'host';
  /**
   * Memory the framework's allocator does not see (CUDA context, NCCL's own buffers, the caching
   * allocator's fragmentation): part of what the GPU must hold, not of torch.cuda.max_memory_allocated.
   */
  outsideAllocator?: boolean;
}

export type CategoryBytes = Record<MemoryCategory, number> & { total: number };

export interface PhaseEstimate {
  phase: Phase;
  /** Device bytes per rank. */
  bytes: CategoryBytes;
}

export interface FitVerdict {
  gpu: GpuSpec;
  /** Whether the peak fits; where the estimate is unsure, whether the top of its range fits. */
  fits: boolean;
  /** Capacity minus the peak (unsure: minus the range's top); negative when it does not fit. */
  headroomBytes: number;
  /** The verdict is on the unsure range's top (the estimate itself may fit). */
  atRangeTop?: boolean;
}

export interface MemoryEstimate {
  input: MemoryInput;
  terms: MemoryTerm[];
  phases: PhaseEstimate[];
  peakPhase: Phase;
  /** Device bytes per rank at the peak phase: what must fit. */
  peak: CategoryBytes;
  /** Each category's own highest value over the phases (total: the peak). */
  categoryPeaks: CategoryBytes;
  /** The framework allocator's own peak (no context, no NCCL, no cached segments): torch.cuda.max_memory_allocated. */
  allocatorPeak: number;
  /** The caching allocator's reserved peak (torch.cuda.max_memory_reserved), where it is replayed. */
  reservedPeak?: number;
  /** The largest segment the allocator replay reserved: one request placed differently moves reserved memory by about this much. */
  largestSegment?: number;
  /** Offloaded bytes in host memory. */
  host: { perRank: number; perNode: number };
  /** The policy in effect; for 'auto', the one chosen. */
  checkpointing: { policy: Exclude<CheckpointPolicy, 'auto'>; everyN: number };
  fit?: FitVerdict;
  /**
   * Where the estimate is unsure (far from every GPU measurement, core/memory/measured-coverage.ts):
   * why, and the range of the peak (what must fit). The caching allocator's reserved memory is
   * exact up to where its largest requests land; the range allows two of its largest segments
   * either way, which covers every measured point, so its top is safe.
   */
  unsure?: { why: string; low: number; high: number };
  /** Assumptions the estimate rests on, in words (e.g. "model from preset GPT-2 124M"). */
  notes: string[];
}

export function emptyCategoryBytes(): CategoryBytes {
  return { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: 0 };
}
