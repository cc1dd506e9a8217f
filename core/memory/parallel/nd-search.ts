// Which ways of splitting a run over G GPUs fit a GPU, fastest-looking first, and the inverse
// questions with every degree free: the fewest GPUs that hold the run, the largest micro-batch.
//
// "Fastest-looking" is a heuristic, not a measurement: relative throughput per GPU falls with the
// pipeline bubble ((pp − 1) / (micro-batches · stages per rank), Narayanan et al. 2021), with
// recomputation (a full recompute repeats the forward: +1/3 of a step; op-level selective ≈ +10 %),
// and with communication exposed on the critical path — tensor parallel's all-gathers and
// reduce-scatters per layer (8 % per doubling within a node, doubling the step across nodes),
// context parallel's key/value exchange (10 % per doubling, 25 % per doubling beyond the node that
// tensor parallel leaves), expert parallel's all-to-all (5 % per doubling) and FSDP's all-gathers at
// large shard degrees (2 % per doubling). Context parallel is offered for sequences of 16k tokens and
// more, where it is used. Use the order to choose what to measure first.
import { estimateMemory } from '../estimate';
import type { MemoryEstimate } from '../memory-estimate';
import type { CheckpointPolicy, MemoryInput } from '../memory-input';
import { GPUS_PER_NODE, planOf, withDegrees, type Degrees } from './degrees';
import { stagesPerRankOf, type PipelineSchedule } from './pipeline';

export interface Combination {
  degrees: Degrees;
  checkpointing: { policy: Exclude<CheckpointPolicy, 'auto'>; everyN: number };
  estimate: MemoryEstimate;
  fits: boolean;
  /** Relative throughput per GPU (1 = no overhead at all); higher looks faster. */
  speed: number;
}

const TP = [1, 2, 4, 8];
const CP = [1, 2, 4, 8];
const PP = [1, 2, 4, 8, 16, 32];
const CHECKPOINTING: Array<Combination['checkpointing']> = [
  { policy: 'none', everyN: 1 },
  { policy: 'selective', everyN: 1 },
  { policy: 'every_n', everyN: 1 },
];

/** Every degree combination for `gpus` GPUs that the model allows, with the schedules for pp > 1. */
export function degreeCombinations(input: MemoryInput, gpus: number): Degrees[] {
  const m = planOf(input).model;
  const out: Degrees[] = [];
  for (const tp of TP) {
    if (tp > GPUS_PER_NODE || m.nHeads % tp !== 0 || (m.nKvHeads % tp !== 0 && !m.mla)) continue;
    for (const cp of CP) {
      if (input.seqLen % (2 * cp) !== 0 || (cp > 1 && input.seqLen < 16384)) continue;
      for (const pp of PP) {
        if (pp > 1 && 2 * pp > m.nLayers) continue;
        if (gpus % (tp * cp * pp) !== 0) continue;
        const shard = gpus / (tp * cp * pp);
        const eps = m.moe ? divisorsUpTo(m.moe.experts, shard * cp * tp) : [1];
        for (const ep of eps) {
          const schedules: PipelineSchedule[] = pp > 1 ? ['1F1B', 'Interleaved1F1B'] : ['1F1B'];
          for (const schedule of schedules) out.push({ replicate: 1, shard, tp, cp, pp, ep, schedule });
        }
      }
    }
  }
  return out;
}

function divisorsUpTo(n: number, limit: number): number[] {
  const out: number[] = [];
  for (let d = 1; d <= Math.min(n, limit); d *= 2) if (n % d === 0 && limit % d === 0) out.push(d);
  return out;
}

/** Relative throughput per GPU of a combination (see the header). */
export function speedOf(input: MemoryInput, d: Degrees, c: Combination['checkpointing']): number {
  const plan = planOf(input);
  const perRank = d.pp > 1 ? stagesPerRankOf(d.schedule ?? '1F1B') : 1;
  const microbatches = d.pp > 1 ? Math.max(plan.microbatches, d.pp * perRank) : 1;
  const bubble = d.pp > 1 ? (d.pp - 1) / (microbatches * perRank) : 0;
  const tpCost = d.tp > GPUS_PER_NODE ? 1 : 0.08 * Math.log2(d.tp);
  const recompute = c.policy === 'none' ? 0 : c.policy === 'selective' ? 0.1 : 1 / Math.max(1, c.everyN) / 3;
  const cpInNode = Math.min(d.cp, Math.max(1, GPUS_PER_NODE / d.tp));
  const cpCost = 0.1 * Math.log2(cpInNode) + 0.25 * Math.log2(d.cp / cpInNode);
  const overhead =
    (1 + bubble) *
    (1 + tpCost) *
    (1 + cpCost) *
    (1 + 0.05 * Math.log2(d.ep)) *
    (1 + 0.02 * Math.log2(Math.max(1, d.shard * d.cp))) *
    (1 + recompute);
  return 1 / overhead;
}

/** Each combination with the least recomputation that fits `capacityBytes`; fitting ones first, fastest-looking first. */
export function combinations(input: MemoryInput, gpus: number, capacityBytes: number): Combination[] {
  const out: Combination[] = [];
  for (const degrees of degreeCombinations(input, gpus)) {
    const base = withDegrees(input, degrees);
    let chosen: Combination | undefined;
    for (const checkpointing of CHECKPOINTING) {
      const estimate = estimateMemory({ ...base, checkpointing });
      const fits = estimate.peak.total <= capacityBytes;
      const candidate = { degrees, checkpointing, estimate, fits, speed: speedOf(input, degrees, checkpointing) };
      if (fits) {
        chosen = candidate;
        break;
      }
      if (!chosen || estimate.peak.total < chosen.estimate.peak.total) chosen = candidate;
    }
    out.push(chosen!);
  }
  return out.sort(
    (a, b) => Number(b.fits) - Number(a.fits) || b.speed - a.speed || a.estimate.peak.total - b.estimate.peak.total,
  );
}

export interface GpuCountAnswer {
  gpus: number;
  best: Combination;
}

/** The fewest GPUs (8 per node, powers of two) on which some combination fits, with the fastest-looking one. */
export function fewestGpusAnyDegrees(
  input: MemoryInput,
  capacityBytes: number,
  maxGpus = 4096,
): GpuCountAnswer | undefined {
  for (let gpus = 1; gpus <= maxGpus; gpus *= 2) {
    const best = combinations(input, gpus, capacityBytes)[0];
    if (best?.fits) return { gpus, best };
  }
  return undefined;
}

/**
 * The largest micro-batch (the pipeline micro-batch when pp > 1) that fits with the input's own
 * degrees; 0 when not even one sequence fits. Activations grow linearly with it, so a doubling
 * search then a bisection finds it in a few dozen estimates.
 */
export function largestMicroBatchNd(input: MemoryInput, capacityBytes: number, limit = 1 << 14): number {
  const fits = (b: number) => estimateMemory({ ...input, microBatch: b }).peak.total <= capacityBytes;
  if (!fits(1)) return 0;
  let lo = 1;
  let hi = 2;
  while (hi <= limit && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > limit) return lo;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * The fastest-looking degrees for the input's GPU count that fit `capacityBytes` with the input's own
 * checkpointing, other than its own; undefined when none does.
 */
export function bestDegrees(input: MemoryInput, capacityBytes: number): Degrees | undefined {
  const plan = planOf(input);
  const world = plan.replicate * plan.shard * plan.cp * plan.tp * plan.pp;
  const c =
    input.checkpointing.policy === 'auto'
      ? { policy: 'every_n' as const, everyN: 1 }
      : { policy: input.checkpointing.policy, everyN: input.checkpointing.everyN };
  let best: { d: Degrees; speed: number } | undefined;
  for (const d of degreeCombinations(input, world)) {
    if (
      d.tp === plan.tp &&
      d.cp === plan.cp &&
      d.pp === plan.pp &&
      d.ep === plan.ep &&
      (d.pp === 1 || d.schedule === plan.schedule)
    )
      continue;
    if (estimateMemory(withDegrees(input, d)).peak.total > capacityBytes) continue;
    const speed = speedOf(input, d, c);
    if (!best || speed > best.speed) best = { d, speed };
  }
  return best?.d;
}
