// What a printed training line's words mean: the numbers as scripts print them ("1,234",
// "3.45%", "'2.3456'", "30728.83ms", "nan"), the names they give them ("train loss", "tok/s",
// "learning_rate"), and which of the dashboard's own charts a name belongs to. Shared by every
// recogniser of printed metrics (recognisers.ts) and by a person's own pattern.
import { recogniseTag, type RecognisedMetric } from '../../../../core/runs/scalar-tags';

/** One value read from a line: its scalar tag, and the dashboard chart it belongs to (null: none, only its tag group). */
export interface PrintedValue {
  tag: string;
  value: number;
  metric: RecognisedMetric | null;
}

/** Every printed scalar's tag starts so: they form their own group in "all scalars". */
export const PRINTED_PREFIX = 'printed/';

// eslint-disable-next-line no-control-regex -- terminal colour codes start with ESC
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** A line without terminal colours (torchtitan colours its step lines) and surrounding space. */
export function plainLine(line: string): string {
  return line.replace(ANSI, '').trim();
}

/**
 * The rank a line comes from when a launcher marked it ("[rank 1] " from FSDP Studio's supervisor,
 * "[default1]:" from torchrun --tee, "1: " from srun --label), and the line without the mark.
 */
export function rankOfLine(line: string): { rank: number | undefined; text: string } {
  const m = /^(?:\[rank\s*(\d+)\]:?|\[default(\d+)\]:|(\d+):(?=\s))\s*/.exec(line);
  if (!m) return { rank: undefined, text: line };
  return { rank: Number(m[1] ?? m[2] ?? m[3]), text: line.slice(m[0].length) };
}

/** A number as printed: "1,234", "-3.2e-05", "nan", "inf"; undefined when it is not one. */
export function parsePrintedNumber(text: string): number | undefined {
  let t = text.trim().replace(/^['"]|['"]$/g, '');
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(t)) t = t.replace(/,/g, '');
  if (/^[+-]?nan$/i.test(t)) return Number.NaN;
  if (/^\+?inf(inity)?$/i.test(t)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/i.test(t)) return Number.NEGATIVE_INFINITY;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return undefined;
  return Number(t);
}

/** Printed names of the dashboard's metrics (lower case, spaces and dashes as `_`). */
const NAMES: Record<string, RecognisedMetric> = {
  loss: 'loss',
  train_loss: 'loss',
  training_loss: 'loss',
  val_loss: 'val_loss',
  eval_loss: 'val_loss',
  valid_loss: 'val_loss',
  validation_loss: 'val_loss',
  test_loss: 'val_loss',
  lr: 'lr',
  learning_rate: 'lr',
  grad_norm: 'grad_norm',
  gradient_norm: 'grad_norm',
  gnorm: 'grad_norm',
  norm: 'grad_norm',
  tps: 'tokens_per_s',
  wps: 'tokens_per_s',
  'tok/s': 'tokens_per_s',
  'tokens/s': 'tokens_per_s',
  // build-nanogpt's `tok/sec: 12345.67`
  'tok/sec': 'tokens_per_s',
  'tokens/sec': 'tokens_per_s',
  tok_per_sec: 'tokens_per_s',
  tok_per_s: 'tokens_per_s',
  tokens_per_s: 'tokens_per_s',
  tokens_per_sec: 'tokens_per_s',
  tokens_per_second: 'tokens_per_s',
  throughput: 'tokens_per_s',
  mfu: 'mfu',
};

/** Names of a step's duration; with a unit (ms, s) they are the step-time chart's. */
const DURATIONS = new Set([
  'time',
  'dt',
  'step_time',
  'iter_time',
  'time_per_step',
  'elapsed_time_per_step',
  'step_ms',
  'time_ms',
]);

export function normaliseName(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
}

/**
 * The value of `name` printed as `raw` (a number, maybe followed by a unit), as a scalar: percent
 * MFU as a fraction (what the MFU chart draws), a step's time in milliseconds. Undefined when raw
 * is not a number, and for values scripts print as "not measured yet" (nanoGPT's MFU of -100%).
 */
export function printedValue(name: string, raw: string, unit = ''): PrintedValue | undefined {
  const value = parsePrintedNumber(raw);
  if (value === undefined) return undefined;
  const key = normaliseName(name);
  const u = unit.trim();
  const tag = `${PRINTED_PREFIX}${key}${u && u !== '%' ? `_${u.toLowerCase()}` : ''}`;
  let metric: RecognisedMetric | null = NAMES[key] ?? recogniseTag(key) ?? null;
  if (DURATIONS.has(key) || key.endsWith('_time')) {
    if (u === 'ms') return { tag, value, metric: 'step_ms' };
    if (u === 's' || key === 'step_time' || key === 'elapsed_time_per_step')
      return { tag: `${PRINTED_PREFIX}${key}_ms`, value: value * 1000, metric: 'step_ms' };
    return { tag, value, metric: null };
  }
  if (metric === 'mfu') {
    if (value < 0) return undefined;
    return { tag, value: u === '%' || value > 1.5 ? value / 100 : value, metric };
  }
  // A value with a unit other than the metric's own is not that metric (memory "1.2GiB" is no loss).
  if (u && u !== '%' && metric !== 'tokens_per_s') metric = null;
  return { tag, value, metric };
}
