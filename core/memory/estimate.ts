// The memory model's entry point: asks the framework's model for its terms, finds each phase's
// peak (the backward is walked block by block, since activations drain while gradients fill),
// adds fragmentation, and gives the verdict. Pure and fast: one estimate is well under 1 ms.
import { deepspeedTerms } from './frameworks/deepspeed';
import { fsdpStudioTerms } from './frameworks/fsdp-studio';
import { pytorchTerms } from './frameworks/pytorch';
import type { FrameworkTerms, TermSpec } from './frameworks/term-spec';
import { emptyCategoryBytes, MEMORY_CATEGORIES, PHASES, type CategoryBytes, type MemoryEstimate, type MemoryTerm, type Phase, type PhaseEstimate } from './memory-estimate';
import type { CheckpointPolicy, Framework, MemoryInput } from './memory-input';

const FRAMEWORKS: Record<Framework, (input: MemoryInput) => FrameworkTerms> = {
  'fsdp-studio': fsdpStudioTerms,
  pytorch: pytorchTerms,
  deepspeed: deepspeedTerms,
};

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
  let smallest: { policy: FixedPolicy; peak: number } | undefined;
  // Only the peak decides; the full estimate is made once, for the chosen policy.
  for (const c of checkpointCandidates(input)) {
    const peak = Math.max(...deviceTotalsAtMoments({ ...input, checkpointing: { ...input.checkpointing, ...c } }));
    if (budget !== undefined && peak <= budget) return withAutoNote(estimateFixed({ ...input, checkpointing: { ...input.checkpointing, ...c } }), input, undefined);
    if (!smallest || peak < smallest.peak) smallest = { policy: c, peak };
  }
  // Our runtime rejects such a config (native/MEMORY.md); the estimate still shows how close it gets.
  const why = budget === undefined ? 'no budget (memory_budget_gb) or target GPU' : 'no policy fits the budget, so the runtime would reject this config';
  return withAutoNote(estimateFixed({ ...input, checkpointing: { ...input.checkpointing, ...smallest!.policy } }), input, why);
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
  const cost = (c: FixedPolicy) => (c.policy === 'selective' ? L * (attention / 2) : c.policy === 'every_n' ? Math.floor(L / c.everyN) * full : 0);
  const candidates: FixedPolicy[] = [{ policy: 'none', everyN: 1 }, { policy: 'selective', everyN: 1 }];
  for (let n = L; n >= 1; n--) {
    // Different n that checkpoint the same number of blocks cost the same; keep the largest.
    if (n < L && Math.floor(L / n) === Math.floor(L / (n + 1))) continue;
    candidates.push({ policy: 'every_n', everyN: n });
  }
  return candidates.map((c, i) => ({ c, i, k: cost(c) })).sort((a, b) => a.k - b.k || a.i - b.i).map((x) => x.c);
}

function estimateFixed(input: MemoryInput): MemoryEstimate {
  const fw = FRAMEWORKS[input.framework](input);
  const specs = fw.terms;
  // Backward: evaluate every step and keep the one where the device holds the most.
  const backward = backwardTotals(fw);
  const bestStep = backward.indexOf(Math.max(...backward));
  const terms: MemoryTerm[] = specs.map((t) => ({
    id: t.id,
    category: t.category,
    label: t.label,
    where: t.where,
    ...(t.outsideAllocator ? { outsideAllocator: true } : {}),
    bytes: { forward: t.forward, backward: backwardAt(t, bestStep), optimizer: t.optimizer },
  }));
  if (fw.fragmentation > 0) terms.push(fragmentationTerm(terms, fw.fragmentation));

  const phases: PhaseEstimate[] = PHASES.map((phase) => ({ phase, bytes: sumByCategory(terms, phase) }));
  const categoryPeaks = emptyCategoryBytes();
  for (const c of MEMORY_CATEGORIES) categoryPeaks[c] = Math.max(...phases.map((p) => p.bytes[c]));
  const peakEntry = phases.reduce((a, b) => (b.bytes.total > a.bytes.total ? b : a));
  const allocatorPeak = Math.max(...PHASES.map((phase) => terms.filter((t) => t.where === 'device' && !t.outsideAllocator).reduce((s, t) => s + t.bytes[phase], 0)));
  const hostPerRank = Math.max(...PHASES.map((phase) => terms.filter((t) => t.where === 'host').reduce((s, t) => s + t.bytes[phase], 0)));
  const estimate: MemoryEstimate = {
    input,
    terms,
    phases,
    peakPhase: peakEntry.phase,
    peak: peakEntry.bytes,
    categoryPeaks: { ...categoryPeaks, total: peakEntry.bytes.total },
    allocatorPeak,
    host: { perRank: hostPerRank, perNode: hostPerRank * input.nprocPerNode },
    checkpointing: { policy: input.checkpointing.policy === 'auto' ? 'none' : input.checkpointing.policy, everyN: input.checkpointing.everyN },
    notes: [...fw.notes],
  };
  if (input.gpu) {
    const headroomBytes = input.gpu.memoryBytes - estimate.peak.total;
    estimate.fit = { gpu: input.gpu, fits: headroomBytes >= 0, headroomBytes };
  }
  return estimate;
}

/**
 * Device bytes per rank at every moment the model distinguishes: end of forward, each backward
 * step, optimizer step. Each is affine in the micro-batch (activations scale with it, nothing else
 * does), which lets the inverse questions solve for the micro-batch instead of searching.
 */
export function deviceTotalsAtMoments(input: MemoryInput): number[] {
  const fw = FRAMEWORKS[input.framework](input);
  const at = (bytes: (t: TermSpec) => number) => {
    let allocated = 0;
    let outside = 0;
    for (const t of fw.terms) {
      if (t.where !== 'device') continue;
      if (t.outsideAllocator) outside += bytes(t);
      else allocated += bytes(t);
    }
    return allocated * (1 + fw.fragmentation) + outside;
  };
  return [at((t) => t.forward), ...backwardTotals(fw), at((t) => t.optimizer)];
}

function backwardTotals(fw: FrameworkTerms): number[] {
  const totals: number[] = [];
  for (let step = 0; step < fw.backwardSteps; step++) {
    let allocated = 0;
    let outside = 0;
    for (const t of fw.terms) {
      if (t.where !== 'device') continue;
      if (t.outsideAllocator) outside += backwardAt(t, step);
      else allocated += backwardAt(t, step);
    }
    totals.push(allocated * (1 + fw.fragmentation) + outside);
  }
  return totals;
}

export function describePolicy(c: { policy: CheckpointPolicy; everyN: number }): string {
  if (c.policy === 'every_n') return c.everyN === 1 ? 'every block' : `every ${c.everyN} blocks`;
  if (c.policy === 'selective') return 'selective';
  return c.policy === 'auto' ? 'auto' : 'none';
}

function backwardAt(t: TermSpec, step: number): number {
  return typeof t.backward === 'number' ? t.backward : t.backward(step);
}

/** The caching allocator rounds and splits blocks; reserved memory exceeds allocated by a margin. */
function fragmentationTerm(terms: MemoryTerm[], fraction: number): MemoryTerm {
  const of = (phase: Phase) => fraction * terms.filter((t) => t.where === 'device' && !t.outsideAllocator).reduce((s, t) => s + t.bytes[phase], 0);
  return {
    id: 'other.fragmentation',
    category: 'other',
    label: `allocator fragmentation margin (${Math.round(fraction * 100)}% of allocated)`,
    where: 'device',
    outsideAllocator: true,
    bytes: { forward: of('forward'), backward: of('backward'), optimizer: of('optimizer') },
  };
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
