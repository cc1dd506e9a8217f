// The estimator against memory measured on GPUs (test/fixtures/measured/, format in its README):
// per point, the relative error of the allocator peak (torch.cuda.max_memory_allocated), of each
// phase's peak, and of the reserved peak (max_memory_reserved); and their medians and worst cases.
// Shared by test/unit/memory-accuracy.test.ts (which holds the targets) and bench/memory-accuracy.ts
// (which prints the table).
import { CachingAllocator } from './caching-allocator';
import { estimateMemory } from './estimate';
import { replayTraining } from './frameworks/pytorch-replay';
import { PHASES, type Phase } from './memory-estimate';
import type { MemoryInput } from './memory-input';

export const MEASURED_FORMAT = 'fsdp-studio/measured-memory/v1';

export interface MeasuredPoint {
  id: string;
  input: MemoryInput;
  measured: {
    max_memory_allocated: number;
    max_memory_reserved: number;
    phases: Record<Phase, { peak_allocated: number; end_allocated: number }>;
  };
}

export interface MeasuredFile {
  format: string;
  device: string;
  date: string;
  command: string;
  memory_total_bytes?: number;
  cuda_context_bytes?: number;
  points: MeasuredPoint[];
}

export interface PointError {
  id: string;
  /** Predicted and measured bytes, and (predicted − measured) / measured. */
  allocated: Comparison;
  reserved: Comparison;
  phases: Record<Phase, Comparison>;
}

export interface Comparison {
  predicted: number;
  measured: number;
  error: number;
}

function compare(predicted: number, measured: number): Comparison {
  return { predicted, measured, error: (predicted - measured) / measured };
}

/**
 * The process the harness measured a point in (test/reference/measure_memory.py measures every
 * configuration of a file in one process, emptying the cache between them): its first matrix
 * product (the header's) made the forward thread's cuBLAS workspace before the first point;
 * autograd's was made in the first point's first backward, carved from a cached segment that its
 * live workspace pins for every later point. Found by replaying the first point as it ran.
 */
export function harnessHistory(file: MeasuredFile): Map<string, NonNullable<MemoryInput['cublasHistory']>> {
  const out = new Map<string, NonNullable<MemoryInput['cublasHistory']>>();
  const [first, ...rest] = file.points;
  if (!first) return out;
  out.set(first.id, { forward: true, backward: false });
  const backwardSegmentBytes = backwardWorkspaceSegment({ ...first.input, cublasHistory: { forward: true, backward: false } });
  for (const p of rest) out.set(p.id, { forward: true, backward: true, backwardSegmentBytes });
  return out;
}

/** The segment autograd's cuBLAS workspace is carved from when a run makes it in its step 1. */
function backwardWorkspaceSegment(input: MemoryInput): number {
  const allocator = new CachingAllocator();
  let segment = 0;
  let phase = '';
  replayTraining(input, {
    alloc(id, bytes, term, stream, host) {
      if (host) return;
      allocator.malloc(id, bytes, stream);
      if (term === 'cublas' && phase === 'backward' && !segment) segment = allocator.segmentOf(id);
    },
    free: (id) => allocator.free(id),
    phase: (_, p) => {
      phase = p;
    },
  }, 1);
  return segment;
}

export function comparePoint(p: MeasuredPoint, history?: MemoryInput['cublasHistory']): PointError {
  const e = estimateMemory({ ...p.input, ...(history ? { cublasHistory: history } : {}) });
  // A phase's allocator bytes: every device term the caching allocator counts, at that phase's peak.
  const inAllocator = (phase: Phase) => e.terms.filter((t) => t.where === 'device' && !t.outsideAllocator).reduce((s, t) => s + t.bytes[phase], 0);
  const phases = Object.fromEntries(PHASES.map((ph) => [ph, compare(inAllocator(ph), p.measured.phases[ph].peak_allocated)])) as Record<Phase, Comparison>;
  return {
    id: p.id,
    allocated: compare(e.allocatorPeak, p.measured.max_memory_allocated),
    reserved: compare(e.reservedPeak ?? e.allocatorPeak, p.measured.max_memory_reserved),
    phases,
  };
}

export interface ErrorSummary {
  points: number;
  /** Median and largest absolute relative error. */
  median: number;
  max: number;
  worst: string;
}

export function summarise(errors: PointError[], pick: (e: PointError) => Comparison): ErrorSummary {
  const abs = errors.map((e) => ({ id: e.id, x: Math.abs(pick(e).error) })).sort((a, b) => a.x - b.x);
  const n = abs.length;
  const median = n === 0 ? NaN : n % 2 ? abs[(n - 1) / 2].x : (abs[n / 2 - 1].x + abs[n / 2].x) / 2;
  return { points: n, median, max: n ? abs[n - 1].x : NaN, worst: n ? abs[n - 1].id : '' };
}

/** The summaries the accuracy targets are stated on. */
export function accuracySummary(errors: PointError[]): Record<'allocated' | 'reserved' | Phase, ErrorSummary> {
  return {
    allocated: summarise(errors, (e) => e.allocated),
    reserved: summarise(errors, (e) => e.reserved),
    forward: summarise(errors, (e) => e.phases.forward),
    backward: summarise(errors, (e) => e.phases.backward),
    optimizer: summarise(errors, (e) => e.phases.optimizer),
  };
}
