// An estimate in a line of words, the same in the inline hint, the CLI and the panel:
// "≈ 23.4 GiB / GPU (params 3.1 · grads 3.1 · optim 12.5 · act 4.2 · allocator reserve 1.9 · other 0.5) — fits H100 80GB".
import type { MemoryEstimate } from './memory-estimate';
import type { MemoryInput } from './memory-input';

const TiB = 1024 ** 4;
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

export function gib(bytes: number, digits = 1): string {
  return (bytes / GiB).toFixed(digits);
}

/** "23.4 GiB", or "111.1 MiB" below a GiB, where tenths of a GiB say little; TiB from a TiB on. */
export function formatBytes(bytes: number): string {
  if (Math.abs(bytes) >= TiB) return `${(bytes / TiB).toFixed(1)} TiB`;
  return Math.abs(bytes) >= GiB ? `${gib(bytes)} GiB` : `${(bytes / MiB).toFixed(1)} MiB`;
}

/** Per-rank wording: "GPU" on GPUs, "rank" for CPU runs of our runtime. */
export function unitOf(estimate: MemoryEstimate): string {
  return estimate.input.device === 'cuda' ? 'GPU' : 'rank';
}

export function summaryLine(estimate: MemoryEstimate): string {
  const p = estimate.peak;
  const [unit, div] = p.total >= TiB ? ['TiB', TiB] : p.total >= GiB ? ['GiB', GiB] : ['MiB', MiB];
  const n = (b: number) => (b / div).toFixed(1);
  // The caching allocator's reserve is named: on a GPU it is often most of what is not tensors.
  const reserve = allocatorReserve(estimate);
  const other = p.workspace + p.comm + p.other - reserve;
  const parts = `params ${n(p.params)} · grads ${n(p.grads)} · optim ${n(p.optimizer)} · act ${n(p.activations)}${reserve > 0 ? ` · allocator reserve ${n(reserve)}` : ''} · other ${n(other)}`;
  const unsure = estimate.unsure
    ? ` — unsure, ${n(estimate.unsure.low)}–${n(estimate.unsure.high)} ${unit} (${estimate.unsure.why})`
    : '';
  return `${approx(estimate)} ${n(p.total)} ${unit} / ${unitOf(estimate)} (${parts})${unsure}${notModelledSuffix(estimate.input)}${verdictSuffix(estimate)}`;
}

/** The terms that are the caching allocator's and not the tensors': cached free segments, block rounding, fragmentation. */
const ALLOCATOR_RESERVE_TERMS = new Set(['other.allocator-cache', 'other.block-rounding', 'other.fragmentation']);

/** What the caching allocator holds beyond the tensors at the peak, in bytes (0 where it is not modelled). */
export function allocatorReserve(estimate: MemoryEstimate): number {
  return estimate.terms
    .filter((t) => ALLOCATOR_RESERVE_TERMS.has(t.id) && t.where === 'device')
    .reduce((sum, t) => sum + (t.bytes?.[estimate.peakPhase] ?? 0), 0);
}

/**
 * The estimate in a few words, for the inline hint, which must fit the editor's width:
 * "≈ 23.4 GiB / GPU — fits H100 80GB" (where unsure, "up to" the range's top); summaryLine has the rest.
 */
export function shortLine(estimate: MemoryEstimate): string {
  const bound = notModelledBound(estimate.input);
  const left = bound ? `unsure: ${notModelledShort(estimate.input)} not modelled` : '';
  const unit = unitOf(estimate);
  // An upper bound's figure is the top of the allocator's range too, so one number says it.
  if (bound === 'upper')
    return `≤ ${formatBytes(estimate.unsure?.high ?? estimate.peak.total)} / ${unit} (${left})${verdictSuffix(estimate)}`;
  const top = estimate.unsure ? `up to ${formatBytes(estimate.unsure.high)}` : '';
  const aside = [top, left].filter(Boolean).join('; ');
  return `≈ ${formatBytes(estimate.peak.total)} / ${unit}${aside ? ` (${aside})` : ''}${verdictSuffix(estimate)}`;
}

/**
 * How sure the estimate is of what the config sets but the estimate leaves out: 'upper' where each
 * such setting lowers memory (the estimate is an upper bound: "fits" holds, "does not fit" may not),
 * 'unsure' where one may also raise it; undefined where nothing is left out.
 */
export function notModelledBound(input: MemoryInput): 'upper' | 'unsure' | undefined {
  const left = input.notModelled ?? [];
  if (left.length === 0) return undefined;
  return left.every((n) => n.effect === 'lowers') ? 'upper' : 'unsure';
}

/** "LoRA, 4-bit, +2": what is left out, short enough for the inline hint (the hover has all of it). */
export function notModelledShort(input: MemoryInput): string {
  const names = (input.notModelled ?? []).map((n) => n.what);
  return names.length > 3 ? `${names.slice(0, 2).join(', ')}, +${names.length - 2}` : names.join(', ');
}

/** "LoRA (use_peft: true), 4-bit (load_in_4bit: true)": what is left out and where the config says it. */
export function notModelledLong(input: MemoryInput): string {
  return (input.notModelled ?? []).map((n) => `${n.what} (${n.key})`).join(', ');
}

function notModelledSuffix(input: MemoryInput): string {
  const bound = notModelledBound(input);
  if (!bound) return '';
  return bound === 'upper'
    ? ` — an upper bound: not modelled, each lowering memory: ${notModelledLong(input)}`
    : ` — unsure: not modelled, lowering or raising memory: ${notModelledLong(input)}`;
}

/** "≤" where the estimate is an upper bound (what it leaves out only lowers memory) with no range of its own, else "≈". */
function approx(estimate: MemoryEstimate): string {
  return notModelledBound(estimate.input) === 'upper' && !estimate.unsure ? '≤' : '≈';
}

export function verdictText(estimate: MemoryEstimate): string | undefined {
  const fit = estimate.fit;
  if (!fit) return undefined;
  const bound = notModelledBound(estimate.input);
  // An upper bound that fits is a sure "fits"; an estimate that may be low is not.
  if (fit.fits) return bound === 'unsure' ? `may fit ${fit.gpu.name}` : `fits ${fit.gpu.name}`;
  if (bound)
    return `may not fit ${fit.gpu.name} (the ${bound === 'upper' ? 'upper bound' : 'estimate'} is ${formatBytes(-fit.headroomBytes)} over)`;
  // Unsure, and only the range's top is over: it may or may not fit.
  if (fit.atRangeTop && estimate.peak.total <= fit.gpu.memoryBytes)
    return `may not fit ${fit.gpu.name} (the range's top is ${formatBytes(-fit.headroomBytes)} over)`;
  return `does not fit ${fit.gpu.name} (${formatBytes(-fit.headroomBytes)} over)`;
}

function verdictSuffix(estimate: MemoryEstimate): string {
  const v = verdictText(estimate);
  return v ? ` — ${v}` : '';
}

/** "8.03 B" from a billion on, else "124.4 M": how many parameters a model has, in words. */
export function formatParameters(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(2)} B` : `${(n / 1e6).toFixed(1)} M`;
}
