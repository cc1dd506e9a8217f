// The questions asked when a run does not fit (or fits with room to spare): the largest
// micro-batch a GPU holds, the fewest GPUs that hold the run, and what each knob would save.
import { deviceTotalsAtMoments, estimateMemory } from './estimate';
import { applyChange, describeChange, type MemoryChange } from './memory-change';
import type { MemoryEstimate } from './memory-estimate';
import { SHARDING_STRATEGIES, type MemoryInput } from './memory-input';
import { bestDegrees } from './parallel/nd-search';

const MAX_MICRO_BATCH = 1 << 16;
/** A knob that moves the peak by less than this changes nothing worth offering. */
const NOTHING_BYTES = 1024 * 1024;
/** Micro-batch suggestions go up to this, and to at most four times the current one: beyond, the global batch (and the step) change too much to call it a memory knob. */
const MAX_SUGGESTED_MICRO_BATCH = 1024;
const MAX_GPUS = 4096;
const GPUS_PER_NODE = 8;

function peakOf(input: MemoryInput): number {
  return estimateMemory(input).peak.total;
}

/** The largest micro-batch whose peak fits `capacityBytes`; 0 when not even one sequence fits. */
export function maxMicroBatch(input: MemoryInput, capacityBytes: number): number {
  const fits = (b: number) => peakOf({ ...input, microBatch: b }) <= capacityBytes;
  if (!fits(1)) return 0;
  let b = input.checkpointing.policy === 'auto' ? searchMicroBatch(fits) : solveMicroBatch(input, capacityBytes);
  // The solution is exact up to rounding; settle it against real estimates.
  while (b > 1 && !fits(b)) b--;
  while (b < MAX_MICRO_BATCH && fits(b + 1)) b++;
  return b;
}

/**
 * Every moment's device total is affine in the micro-batch (bytes = c0 + b·c1), so the largest b
 * that fits is the smallest (capacity − c0) / c1 over the moments that grow with it.
 */
function solveMicroBatch(input: MemoryInput, capacityBytes: number): number {
  const one = deviceTotalsAtMoments({ ...input, microBatch: 1 });
  const two = deviceTotalsAtMoments({ ...input, microBatch: 2 });
  let best = MAX_MICRO_BATCH;
  for (let j = 0; j < one.length; j++) {
    const slope = two[j] - one[j];
    if (slope <= 0) continue;
    best = Math.min(best, Math.floor((capacityBytes - (one[j] - slope)) / slope));
  }
  return Math.max(1, best);
}

/** `auto` checkpointing changes policy with the batch: double, then bisect. */
function searchMicroBatch(fits: (b: number) => boolean): number {
  let lo = 1;
  let hi = 2;
  while (hi <= MAX_MICRO_BATCH && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > MAX_MICRO_BATCH) return lo;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

export interface GpuCount {
  nprocPerNode: number;
  nnodes: number;
  estimate: MemoryEstimate;
}

/**
 * The fewest GPUs (powers of two, up to 8 per node) whose per-GPU peak fits `capacityBytes`, keeping
 * the micro-batch; undefined if none up to 4096 does (e.g. NO_SHARD, where more GPUs do not help).
 */
export function fewestGpus(input: MemoryInput, capacityBytes: number): GpuCount | undefined {
  for (let n = 1; n <= MAX_GPUS; n *= 2) {
    const nprocPerNode = Math.min(n, Math.max(GPUS_PER_NODE, input.nprocPerNode));
    const nnodes = Math.max(1, n / nprocPerNode);
    const estimate = estimateMemory({ ...input, nprocPerNode, nnodes });
    if (estimate.peak.total <= capacityBytes) return { nprocPerNode, nnodes, estimate };
  }
  return undefined;
}

export interface KnobEffect {
  change: MemoryChange;
  label: string;
  peakBytes: number;
  /** Positive when the change lowers the peak. */
  savedBytes: number;
  fits?: boolean;
}

/** What each knob does to the peak, one change at a time, biggest saving first. */
export function knobEffects(input: MemoryInput): KnobEffect[] {
  const base = peakOf(input);
  const changes: MemoryChange[] = [];
  for (const s of SHARDING_STRATEGIES) {
    if (s === input.strategy) continue;
    if (s === 'HYBRID_SHARD' && (input.nnodes === 1 || input.framework === 'deepspeed')) continue;
    changes.push({ knob: 'strategy', value: s });
  }
  const c = input.checkpointing;
  for (const value of [
    { policy: 'none', everyN: 1 },
    { policy: 'selective', everyN: 1 },
    { policy: 'every_n', everyN: 1 },
  ] as const) {
    if (c.policy !== value.policy || (value.policy === 'every_n' && c.everyN !== 1))
      changes.push({ knob: 'checkpointing', value: { ...value } });
  }
  changes.push({ knob: 'precision', value: input.precision.param === 'float32' ? 'bfloat16' : 'float32' });
  changes.push({ knob: 'offload', value: !input.offload.optimizer });
  if (input.microBatch > 1) changes.push({ knob: 'microBatch', value: Math.max(1, Math.floor(input.microBatch / 2)) });
  if (input.gpu) {
    const best = suggestedMicroBatch(input, maxMicroBatch(input, input.gpu.memoryBytes));
    if (best > 0 && best !== input.microBatch) changes.push({ knob: 'microBatch', value: best });
    // N-D parallel: the fastest-looking other split of the same GPUs that fits.
    const degrees =
      input.framework === 'torchtitan' && input.parallel ? bestDegrees(input, input.gpu.memoryBytes) : undefined;
    if (degrees) changes.push({ knob: 'parallel', value: degrees });
  }
  return changes
    .map((change) => {
      const peakBytes = peakOf(applyChange(input, change));
      return {
        change,
        label: describeChange(change),
        peakBytes,
        savedBytes: base - peakBytes,
        ...(input.gpu ? { fits: peakBytes <= input.gpu.memoryBytes } : {}),
      };
    })
    .filter((k) => Math.abs(k.savedBytes) >= NOTHING_BYTES)
    .sort((a, b) => b.savedBytes - a.savedBytes);
}

/**
 * The micro-batch to offer given the largest that fits: itself when smaller than the current one
 * (it makes the run fit); when larger, a power of two no more than four times the current one and
 * MAX_SUGGESTED_MICRO_BATCH, since the largest that fits a small model is often in the thousands.
 */
export function suggestedMicroBatch(input: MemoryInput, largest: number): number {
  if (largest <= input.microBatch) return largest;
  const cap = Math.min(largest, Math.max(8, 4 * input.microBatch), MAX_SUGGESTED_MICRO_BATCH);
  return 2 ** Math.floor(Math.log2(cap));
}
