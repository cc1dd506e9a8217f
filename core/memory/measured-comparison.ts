// The estimator against memory measured on GPUs (test/fixtures/measured/, format in its README):
// per point, the relative error of the allocator peak (torch.cuda.max_memory_allocated), of each
// phase's peak, and of the reserved peak (max_memory_reserved); and their medians and worst cases.
// Shared by test/unit/memory-accuracy.test.ts (which holds the targets) and bench/memory-accuracy.ts
// (which prints the table). Points that give only the reserved peak (test/fixtures/measured-reserved/)
// are compared on it alone. `widthSplits` holds the estimate to shapes it was not fitted on: the
// measurements split by model width, the one free choice (how many of the largest segments the
// unsure range allows) fitted on one part, the errors reported on the other.
import { CachingAllocator } from './caching-allocator';
import { estimateMemory } from './estimate';
import { replayTraining } from './frameworks/pytorch-replay';
import { PHASES, type Phase } from './memory-estimate';
import type { MemoryInput } from './memory-input';

export const MEASURED_FORMAT = 'fsdp-studio/measured-memory/v1';
export const RESERVED_FORMAT = 'fsdp-studio/measured-reserved/v1';

const GiB = 1024 ** 3;

/** A file of points that give only the reserved peak, quoted from `source` (format in test/fixtures/measured-reserved/README.md). */
export interface ReservedFile {
  format: string;
  source: string;
  device: string;
  torch: string;
  precision_gib: number;
  points: Array<{ id: string; input: MemoryInput; measured: { max_memory_reserved_gib: number } }>;
}

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

/** A point's reserved-peak error, with what the unsure range is made of. */
export interface ReservedError {
  id: string;
  dModel: number;
  reserved: Comparison;
  /** The replay's largest segment: the unsure range's unit. */
  largestSegment: number;
  /** The whole point's comparison where the measurement has more than the reserved peak. */
  full?: PointError;
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
  const backwardSegmentBytes = backwardWorkspaceSegment({
    ...first.input,
    cublasHistory: { forward: true, backward: false },
  });
  for (const p of rest) out.set(p.id, { forward: true, backward: true, backwardSegmentBytes });
  return out;
}

/** The segment autograd's cuBLAS workspace is carved from when a run makes it in its step 1. */
function backwardWorkspaceSegment(input: MemoryInput): number {
  const allocator = new CachingAllocator();
  let segment = 0;
  let phase = '';
  replayTraining(
    input,
    {
      alloc(id, bytes, term, stream, host) {
        if (host) return;
        allocator.malloc(id, bytes, stream);
        if (term === 'cublas' && phase === 'backward' && !segment) segment = allocator.segmentOf(id);
      },
      free: (id) => allocator.free(id),
      phase: (_, p) => {
        phase = p;
      },
    },
    1,
  );
  return segment;
}

export function comparePoint(p: MeasuredPoint, history?: MemoryInput['cublasHistory']): PointError {
  const e = estimateMemory({ ...p.input, ...(history ? { cublasHistory: history } : {}) });
  // A phase's allocator bytes: every device term the caching allocator counts, at that phase's peak.
  const inAllocator = (phase: Phase) =>
    e.terms.filter((t) => t.where === 'device' && !t.outsideAllocator).reduce((s, t) => s + t.bytes[phase], 0);
  const phases = Object.fromEntries(
    PHASES.map((ph) => [ph, compare(inAllocator(ph), p.measured.phases[ph].peak_allocated)]),
  ) as Record<Phase, Comparison>;
  return {
    id: p.id,
    allocated: compare(e.allocatorPeak, p.measured.max_memory_allocated),
    reserved: compare(e.reservedPeak ?? e.allocatorPeak, p.measured.max_memory_reserved),
    phases,
  };
}

/** A reserved-only point, estimated as a fresh process (nothing known of what ran before it). */
export function compareReserved(p: ReservedFile['points'][number]): ReservedError {
  const e = estimateMemory(p.input);
  return {
    id: p.id,
    dModel: p.input.model.dModel,
    reserved: compare(e.reservedPeak ?? e.allocatorPeak, p.measured.max_memory_reserved_gib * GiB),
    largestSegment: e.largestSegment ?? 0,
  };
}

/** A whole measured point as a ReservedError (its largest segment from the same estimate). */
export function reservedOf(p: MeasuredPoint, history?: MemoryInput['cublasHistory']): ReservedError {
  const full = comparePoint(p, history);
  const e = estimateMemory({ ...p.input, ...(history ? { cublasHistory: history } : {}) });
  return {
    id: p.id,
    dModel: p.input.model.dModel,
    reserved: full.reserved,
    largestSegment: e.largestSegment ?? 0,
    full,
  };
}

/** How many of the largest segments (whole numbers) it takes for estimate ± that many to hold every measurement. */
export function segmentsToCover(points: ReservedError[]): number {
  let k = 0;
  for (const p of points) {
    if (!p.largestSegment) continue;
    k = Math.max(k, Math.ceil(Math.abs(p.reserved.predicted - p.reserved.measured) / p.largestSegment - 1e-9));
  }
  return k;
}

export interface SplitReport {
  /** Widths the free choice was fitted on, and the widths it is tested on. */
  fitWidths: number[];
  heldOutWidths: number[];
  /** Segments the unsure range needs to cover the fitted part (the free choice). */
  segments: number;
  heldOut: ReservedSummary;
  /** Held-out points (allocated and phases: those of whole harness runs). */
  heldOutFull: ReturnType<typeof accuracySummary> | undefined;
}

export interface ReservedSummary extends ErrorSummary {
  /** The most negative error (the worst under-prediction) and its point. */
  worstUnder: number;
  worstUnderId: string;
  /** Points more than 2 % under the measurement. */
  under2: number;
  /** Held-out points within the fitted range (estimate ± segments × largest segment). */
  covered: number;
}

export function summariseReserved(points: ReservedError[], segments: number): ReservedSummary {
  const base = summarise(points, (p) => p.reserved);
  const under = points.reduce((w, p) => (p.reserved.error < w.reserved.error ? p : w), points[0]);
  return {
    ...base,
    worstUnder: under ? Math.min(0, under.reserved.error) : NaN,
    worstUnderId: under && under.reserved.error < 0 ? under.id : '',
    under2: points.filter((p) => p.reserved.error < -0.02).length,
    covered: points.filter((p) => Math.abs(p.reserved.predicted - p.reserved.measured) <= segments * p.largestSegment)
      .length,
  };
}

/**
 * The measurements split by model width: for each width of the whole runs, the free choice is
 * fitted on the points of that width and the rest (other widths, and every reserved-only point) is
 * held out.
 */
export function widthSplits(points: ReservedError[]): SplitReport[] {
  const runWidths = [...new Set(points.filter((p) => p.full).map((p) => p.dModel))].sort((a, b) => a - b);
  return runWidths.map((w) => {
    const fit = points.filter((p) => p.full && p.dModel === w);
    const held = points.filter((p) => !(p.full && p.dModel === w));
    const segments = segmentsToCover(fit);
    const full = held.filter((p) => p.full).map((p) => p.full!);
    return {
      fitWidths: [w],
      heldOutWidths: [...new Set(held.map((p) => p.dModel))].sort((a, b) => a - b),
      segments,
      heldOut: summariseReserved(held, segments),
      heldOutFull: full.length ? accuracySummary(full) : undefined,
    };
  });
}

export interface ErrorSummary {
  points: number;
  /** Median and largest absolute relative error. */
  median: number;
  max: number;
  worst: string;
}

export function summarise<T extends { id: string }>(errors: T[], pick: (e: T) => Comparison): ErrorSummary {
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
