// The non-finite values among a run's logged scalars, whoever logged them: the native runtime's
// step events, the companion's scalars events, TensorBoard event files and printed lines. A NaN in
// the grad norm of a Hugging Face Trainer run is as much a diverged run as a NaN loss — and often
// the only sign of one, since the Trainer's default logging_nan_inf_filter logs a finite loss in
// place of a NaN one. Each series is kept by its first non-finite step, per tag and rank: that is
// where the trouble began, and what the NaN view, `fsdp-runs show --json` and the run's state say.
import type { RunHistory } from './run-history';
import type { RecognisedMetric } from './scalar-tags';

/** Where a scalar was read: the NaN view says so, since a logged value has no dump. */
export type ScalarSource = 'runtime' | 'companion' | 'tensorboard' | 'printed';

/** `unknown`: the writer gave null (the protocol's "not finite"), so NaN and Inf cannot be told apart. */
export type NonFiniteKind = 'nan' | 'inf' | 'unknown';

export interface NonFiniteScalar {
  tag: string;
  /** The first step whose value was not finite. */
  step: number;
  /** The rank that logged it; null when the writer does not say (TensorBoard files, unmarked printed lines). */
  rank: number | null;
  kind: NonFiniteKind;
  /** The dashboard chart the tag is drawn in, if any. */
  metric: RecognisedMetric | null;
  source: ScalarSource;
  /** When it was logged, seconds since the epoch. */
  time: number;
}

export class NonFiniteScalars {
  private readonly first = new Map<string, NonFiniteScalar>();
  /** Counts the entries kept or moved earlier: views redraw when it moves. */
  changes = 0;

  /**
   * Notes a value; only a non-finite one (or null, the protocol's "not finite") is kept, first step
   * per tag and rank. Returns what it kept when the value began (or moved earlier) a series' entry.
   */
  note(entry: Omit<NonFiniteScalar, 'kind'>, value: number | null | undefined): NonFiniteScalar | undefined {
    if (value !== null && value !== undefined && Number.isFinite(value)) return undefined;
    const key = `${entry.tag}\u0000${entry.rank ?? ''}`;
    const known = this.first.get(key);
    if (known && known.step <= entry.step) return undefined;
    const kept = { ...entry, kind: kindOf(value) };
    this.first.set(key, kept);
    this.changes++;
    return kept;
  }

  /** Every non-finite series, earliest first. */
  list(): NonFiniteScalar[] {
    return [...this.first.values()].sort((a, b) => a.step - b.step || a.time - b.time);
  }

  get size(): number {
    return this.first.size;
  }
}

function kindOf(value: number | null | undefined): NonFiniteKind {
  if (value === null || value === undefined) return 'unknown';
  return Number.isNaN(value) ? 'nan' : 'inf';
}

/** "NaN", "Inf", or "NaN or Inf" where the writer did not say which. */
export function nonFiniteWord(kind: NonFiniteKind): string {
  return kind === 'nan' ? 'NaN' : kind === 'inf' ? 'Inf' : 'NaN or Inf';
}

/** A run whose last logged value of some metric is not finite: what learned nothing since when. */
export interface NonFiniteEnd {
  tag: string;
  metric: RecognisedMetric | null;
  /** The first step of the non-finite values the series ends with. */
  step: number;
  /** The loss is finite while the gradient norm is not: the Trainer's logging_nan_inf_filter logged a stand-in. */
  lossHidden: boolean;
  /** For a status line: "loss NaN since step 2", "the loss is hidden by logging_nan_inf_filter; the gradient norm is NaN since step 2". */
  text: string;
}

/**
 * The metric a run ends with as NaN or Inf, if any: the loss first, then the gradient norm, then
 * any other tag (earliest first). A NaN that came and went (an fp16 step the GradScaler skipped)
 * is in the NaN view, but the run did not end with it. `hfTrainer`: the run is the Hugging Face
 * Trainer's, whose default logging_nan_inf_filter logs a finite loss in place of a NaN one — a
 * finite loss beside a NaN gradient norm is then that filter at work, and said so.
 */
export function nonFiniteAtEnd(h: RunHistory, hfTrainer = false): NonFiniteEnd | undefined {
  const kinds = new Map(h.nonFinite.list().map((n) => [n.tag, n.kind] as const));
  const word = (tag: string) => nonFiniteWord(kinds.get(tag) ?? 'nan');
  const lossSince = h.nonFiniteLossSince();
  if (lossSince !== undefined) {
    const tag = h.tagOf('loss') ?? 'loss';
    return {
      tag,
      metric: 'loss',
      step: lossSince,
      lossHidden: false,
      text: `loss ${word(tag)} since step ${lossSince}`,
    };
  }
  const ending: Array<{ tag: string; step: number; metric: RecognisedMetric | null }> = [];
  for (const tag of h.scalars.tags()) {
    const { steps, values } = h.scalars.get(tag)!.values;
    let i = values.length - 1;
    if (i < 0 || Number.isFinite(values[i])) continue;
    while (i > 0 && !Number.isFinite(values[i - 1])) i--;
    const metric = (['grad_norm', 'lr', 'val_loss', 'tokens_per_s', 'step_ms', 'mfu'] as const).find(
      (m) => h.tagOf(m) === tag,
    );
    ending.push({ tag, step: steps[i], metric: metric ?? null });
  }
  const first = ending.sort((a, b) => rankOf(a.metric) - rankOf(b.metric) || a.step - b.step)[0];
  if (!first) return undefined;
  const w = word(first.tag);
  if (first.metric === 'grad_norm') {
    const lossShown = h.step.loss.length > 0;
    const text =
      lossShown && hfTrainer
        ? `the loss is hidden by logging_nan_inf_filter; the gradient norm is ${w} since step ${first.step}`
        : `gradient norm ${w} since step ${first.step}${lossShown ? ' (the logged loss is finite)' : ''}`;
    return { ...first, lossHidden: lossShown && hfTrainer, text };
  }
  return { ...first, lossHidden: false, text: `${first.tag} ${w} since step ${first.step}` };
}

/** The gradient norm before other metrics: a NaN there is the run's, a NaN in an eval metric may not be. */
function rankOf(metric: RecognisedMetric | null): number {
  return metric === 'grad_norm' ? 0 : metric === null ? 2 : 1;
}
