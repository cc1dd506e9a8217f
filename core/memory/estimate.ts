// The memory model's entry point: asks the framework's model for its terms, finds each phase's
// peak (the backward is walked block by block, since activations drain while gradients fill),
// adds fragmentation, and gives the verdict. Pure and fast: one estimate is well under 1 ms.
import { deepspeedTerms } from './frameworks/deepspeed';
import { fsdpStudioTerms } from './frameworks/fsdp-studio';
import { pytorchMoments } from './frameworks/pytorch';
import { ndTerms } from './parallel/nd-memory';
import type { FrameworkMoments, FrameworkTerms, FrameworkUnsure, TermSpec } from './frameworks/term-spec';
import {
  emptyCategoryBytes,
  MEMORY_CATEGORIES,
  PHASES,
  type CategoryBytes,
  type MemoryEstimate,
  type MemoryTerm,
  type Phase,
  type PhaseEstimate,
} from './memory-estimate';
import type { CheckpointPolicy, Framework, MemoryInput } from './memory-input';
import { farFromMeasured } from './measured-coverage';

const FRAMEWORKS: Record<Framework, (input: MemoryInput) => FrameworkTerms | FrameworkMoments> = {
  'fsdp-studio': fsdpStudioTerms,
  pytorch: pytorchMoments,
  deepspeed: deepspeedTerms,
  torchtitan: ndTerms,
};

/** A framework's model in the one shape the estimator works with: each phase's highest moment. */
function frameworkMoments(input: MemoryInput): FrameworkMoments {
  // The same input is estimated again and again (hint, diagnostics, panel, inverse questions); a
  // PyTorch replay costs milliseconds, so recent answers are kept.
  const key = JSON.stringify(input);
  const hit = recent.get(key);
  if (hit) {
    recent.delete(key);
    recent.set(key, hit);
    return hit;
  }
  const fw = FRAMEWORKS[input.framework](input);
  const moments = 'phasePeaks' in fw ? fw : fromTermSpecs(fw);
  recent.set(key, moments);
  if (recent.size > RECENT) recent.delete(recent.keys().next().value!);
  return moments;
}

const RECENT = 256;

/** Largest segments the unsure range allows either way (bench/memory-accuracy.ts: the fewest that cover every measured point). */
export const UNSURE_SEGMENTS = 2;
const recent = new Map<string, FrameworkMoments>();

export function estimateMemory(input: MemoryInput): MemoryEstimate {
  if (input.checkpointing.policy !== 'auto') return estimateFixed(input);
  return estimateAuto(input);
}

/**
 * `auto` checkpointing, as the runtime decides it: the candidates (none, selective, every_n for
 * each distinct number of checkpointed blocks) in increasing order of recomputed FLOPs, and the
 * first whose peak fits the budget (memory_budget_gb, else the target GPU). When none fits, or
 * there is no budget, the candidate with the smallest peak.
 */
function estimateAuto(input: MemoryInput): MemoryEstimate {
  const budget = input.checkpointing.budgetBytes ?? input.gpu?.memoryBytes;
  let smallest: MemoryEstimate | undefined;
  for (const c of checkpointCandidates(input)) {
    const e = estimateFixed({ ...input, checkpointing: { ...input.checkpointing, ...c } });
    if (budget !== undefined && e.peak.total <= budget) return withAutoNote(e, input, undefined);
    if (!smallest || e.peak.total < smallest.peak.total) smallest = e;
  }
  // Our runtime rejects such a config (native/MEMORY.md); the estimate still shows how close it gets.
  const why =
    budget === undefined
      ? 'no budget (memory_budget_gb) or target GPU'
      : 'no policy fits the budget, so the runtime would reject this config';
  return withAutoNote(smallest!, input, why);
}

function withAutoNote(e: MemoryEstimate, input: MemoryInput, problem: string | undefined): MemoryEstimate {
  const chose = `auto checkpointing chose ${describePolicy(e.checkpointing)}${problem ? ` (${problem}: the smallest plan)` : ''}`;
  return { ...e, input, notes: [chose, ...e.notes] };
}

type FixedPolicy = { policy: Exclude<CheckpointPolicy, 'auto'>; everyN: number };

/** Candidates of `auto`, least recomputation first (forward FLOPs recomputed per token). */
export function checkpointCandidates(input: MemoryInput): FixedPolicy[] {
  const m = input.model;
  const L = m.nLayers;
  const C = m.dModel;
  const F = m.ffnHidden;
  const attention = 2 * C * input.seqLen;
  // A full recompute repeats a block's forward except its last product, whose output is kept;
  // selective recomputes only the attention scores (QK^T, half the attention FLOPs).
  const full = 2 * (4 * C * C + 2 * C * F) - 2 * C * F + attention;
  const cost = (c: FixedPolicy) =>
    c.policy === 'selective' ? L * (attention / 2) : c.policy === 'every_n' ? Math.floor(L / c.everyN) * full : 0;
  const candidates: FixedPolicy[] = [
    { policy: 'none', everyN: 1 },
    { policy: 'selective', everyN: 1 },
  ];
  for (let n = L; n >= 1; n--) {
    // Different n that checkpoint the same number of blocks cost the same; keep the largest.
    if (n < L && Math.floor(L / n) === Math.floor(L / (n + 1))) continue;
    candidates.push({ policy: 'every_n', everyN: n });
  }
  return candidates
    .map((c, i) => ({ c, i, k: cost(c) }))
    .sort((a, b) => a.k - b.k || a.i - b.i)
    .map((x) => x.c);
}

function estimateFixed(input: MemoryInput): MemoryEstimate {
  const fw = frameworkMoments(input);
  const terms: MemoryTerm[] = fw.terms.map((t, i) => ({
    id: t.id,
    category: t.category,
    label: t.label,
    where: t.where,
    ...(t.outsideAllocator ? { outsideAllocator: true } : {}),
    bytes: {
      forward: fw.phasePeaks.forward.bytes[i],
      backward: fw.phasePeaks.backward.bytes[i],
      optimizer: fw.phasePeaks.optimizer.bytes[i],
    },
  }));
  const inAllocator = (phase: Phase) =>
    terms.filter((t) => t.where === 'device' && !t.outsideAllocator).reduce((s, t) => s + t.bytes[phase], 0);
  let allocatorPeak = Math.max(...PHASES.map(inAllocator));
  if (fw.allocator) {
    // The allocator hands out whole blocks: what it counts as allocated exceeds the tensors' bytes.
    const rounding = { forward: 0, backward: 0, optimizer: 0 };
    for (const phase of PHASES) rounding[phase] = Math.max(0, fw.phasePeaks[phase].allocated - inAllocator(phase));
    terms.push({
      id: 'other.block-rounding',
      category: 'other',
      label: 'caching allocator blocks larger than the tensors in them (512-byte rounding, unsplit remainders ≤ 1 MiB)',
      where: 'device',
      bytes: rounding,
    });
    allocatorPeak = fw.allocator.allocatedPeak;
    // Reserved segments the allocator holds beyond its allocated peak: what nvidia-smi adds.
    const cache = Math.max(0, fw.allocator.reservedPeak - allocatorPeak);
    terms.push({
      id: 'other.allocator-cache',
      category: 'other',
      label:
        "cached but unused allocator segments at the peak (block sizes that do not fit, the reduce-scatter stream's own pool)",
      where: 'device',
      outsideAllocator: true,
      bytes: { forward: cache, backward: cache, optimizer: cache },
    });
  }

  const phases: PhaseEstimate[] = PHASES.map((phase) => ({ phase, bytes: sumByCategory(terms, phase) }));
  const categoryPeaks = emptyCategoryBytes();
  for (const c of MEMORY_CATEGORIES) categoryPeaks[c] = Math.max(...phases.map((p) => p.bytes[c]));
  const peakEntry = phases.reduce((a, b) => (b.bytes.total > a.bytes.total ? b : a));
  const hostPerRank = fw.hostPeak;
  const estimate: MemoryEstimate = {
    input,
    terms,
    phases,
    peakPhase: peakEntry.phase,
    peak: peakEntry.bytes,
    categoryPeaks: { ...categoryPeaks, total: peakEntry.bytes.total },
    allocatorPeak,
    ...(fw.allocator ? { reservedPeak: fw.allocator.reservedPeak, largestSegment: fw.allocator.largestSegment } : {}),
    host: { perRank: hostPerRank, perNode: hostPerRank * input.nprocPerNode },
    checkpointing: {
      policy: input.checkpointing.policy === 'auto' ? 'none' : input.checkpointing.policy,
      everyN: input.checkpointing.everyN,
    },
    notes: [...fw.notes],
  };
  const why = fw.allocator ? farFromMeasured(input) : undefined;
  if (fw.allocator && why) {
    // Reserved memory cannot fall below the allocated peak; the cached rest can move by a segment each way per request placed differently.
    const band = UNSURE_SEGMENTS * fw.allocator.largestSegment;
    const cached = fw.allocator.reservedPeak - allocatorPeak;
    estimate.unsure = {
      why,
      low: estimate.peak.total - Math.min(band, Math.max(0, cached)),
      high: estimate.peak.total + band,
    };
  } else if (fw.unsure)
    estimate.unsure = {
      why: fw.unsure.why,
      low: Math.max(0, estimate.peak.total - fw.unsure.below),
      high: estimate.peak.total + fw.unsure.above,
    };
  if (input.gpu) {
    const top = estimate.unsure?.high ?? estimate.peak.total;
    const headroomBytes = input.gpu.memoryBytes - top;
    estimate.fit = {
      gpu: input.gpu,
      fits: headroomBytes >= 0,
      headroomBytes,
      ...(estimate.unsure ? { atRangeTop: true } : {}),
    };
  }
  return estimate;
}

/**
 * Device bytes per rank at every moment the model distinguishes. Each is affine in the micro-batch
 * (activations scale with it, nothing else does), which lets the inverse questions solve for the
 * micro-batch instead of searching.
 */
export function deviceTotalsAtMoments(input: MemoryInput): number[] {
  return frameworkMoments(input).momentTotals;
}

/** Phase-shaped terms (end of forward, each backward step, optimizer step) as moments. */
function fromTermSpecs(fw: FrameworkTerms): FrameworkMoments {
  const at = (bytes: (t: TermSpec) => number) => fw.terms.map(bytes);
  const total = (v: number[]) => {
    let allocated = 0;
    let outside = 0;
    fw.terms.forEach((t, i) => {
      if (t.where !== 'device') return;
      if (t.outsideAllocator) outside += v[i];
      else allocated += v[i];
    });
    return { allocated, total: allocated * (1 + fw.fragmentation) + outside };
  };
  const forward = at((t) => t.forward);
  const optimizer = at((t) => t.optimizer);
  const backward: number[][] = [];
  for (let step = 0; step < fw.backwardSteps; step++) backward.push(at((t) => backwardAt(t, step)));
  const best = backward.reduce((a, b) => (total(b).total > total(a).total ? b : a));
  const terms = fw.terms.map(({ id, category, label, where, outsideAllocator }) => ({
    id,
    category,
    label,
    where,
    ...(outsideAllocator ? { outsideAllocator } : {}),
  }));
  const phasePeaks = {
    forward: { bytes: forward, allocated: total(forward).allocated },
    backward: { bytes: best, allocated: total(best).allocated },
    optimizer: { bytes: optimizer, allocated: total(optimizer).allocated },
  };
  if (fw.fragmentation > 0) {
    // The caching allocator rounds and splits blocks; reserved memory exceeds allocated by a margin.
    terms.push({
      id: 'other.fragmentation',
      category: 'other',
      label: `allocator fragmentation margin (${Math.round(fw.fragmentation * 100)}% of allocated)`,
      where: 'device',
      outsideAllocator: true,
    });
    for (const phase of PHASES)
      phasePeaks[phase].bytes = [...phasePeaks[phase].bytes, fw.fragmentation * phasePeaks[phase].allocated];
  }
  const host = Math.max(
    ...[forward, ...backward, optimizer].map((v) =>
      fw.terms.reduce((s, t, i) => s + (t.where === 'host' ? v[i] : 0), 0),
    ),
  );
  return {
    terms,
    phasePeaks,
    momentTotals: [forward, ...backward, optimizer].map((v) => total(v).total),
    hostPeak: host,
    notes: fw.notes,
    ...(fw.unsure ? { unsure: termsUnsure(fw, phasePeaks) } : {}),
  };
}

/** FrameworkTerms.unsure as bytes below and above the peak: the fragmentation margin (at the largest allocation) either way, and `above` more. */
function termsUnsure(fw: FrameworkTerms, phasePeaks: FrameworkMoments['phasePeaks']): FrameworkUnsure {
  const margin = fw.fragmentation * Math.max(...PHASES.map((p) => phasePeaks[p].allocated));
  return { why: fw.unsure!.why, below: margin, above: margin + fw.unsure!.above };
}

export function describePolicy(c: { policy: CheckpointPolicy; everyN: number }): string {
  if (c.policy === 'every_n') return c.everyN === 1 ? 'every block' : `every ${c.everyN} blocks`;
  if (c.policy === 'selective') return 'selective';
  return c.policy === 'auto' ? 'auto' : 'none';
}

function backwardAt(t: TermSpec, step: number): number {
  return typeof t.backward === 'number' ? t.backward : t.backward(step);
}

function sumByCategory(terms: MemoryTerm[], phase: Phase): CategoryBytes {
  const out = emptyCategoryBytes();
  for (const t of terms) {
    if (t.where !== 'device') continue;
    out[t.category] += t.bytes[phase];
  }
  out.total = MEMORY_CATEGORIES.reduce((s, c) => s + out[c], 0);
  return out;
}
