// Spikes, loss first: the one rule the dashboard, the spike view and the notifications share.
//
// Two sources. The runtime reports spikes as anomaly events (a z-score over a full window of
// `stability.spike_window` steps, so nothing early in a run). The watch also reads the loss series
// itself with a rule that needs only a few steps and holds for any trainer that logs a loss: a
// value at least LOSS_RATIO times its recent level and far above its step-to-step noise. The same
// rule reads the gradient norm with GRAD_NORM_RATIO: the runtime's window is never full early in a
// run, so without it tiny-cpu's first run, whose norm jumps to 84 at step 14 (42× its recent level), showed
// nothing in "Show spikes" while its sample's comment told of that step (issue 39 item 5).
// A grad-norm excursion while gradient clipping is on is what clipping is for: it is a marker on
// the chart, not an alert (issue 18: a healthy run raised three toasts for norms of ~2.5 clipped
// at 1.0, while a 2.2× loss jump at step 15 went unflagged).
import type { AnomalyEvent } from '../protocol/metrics';
import { roundForDisplay } from './number-format';
import type { RunHistory } from './run-history';
import type { StepSeries } from './step-series';

export type SpikeMetric = 'loss' | 'grad_norm';

/** How loudly to tell a person: a toast that is an error, one that is a warning, or only a chart marker. */
export type Alert = 'error' | 'warning' | 'marker';

export interface Spike {
  step: number;
  metric: SpikeMetric;
  value: number;
  /** The level it jumped from: the median of the last few steps before it (watch rule). */
  baseline?: number;
  /** value / baseline. */
  ratio?: number;
  /** The runtime's z-score against its window. */
  zscore?: number;
  /** Who saw it: the runtime (an anomaly event) or the watch's loss rule (both: merged, 'runtime'). */
  source: 'runtime' | 'watch';
  /** What the runtime did: reported it, or skipped the step's update. */
  action: 'report' | 'skip';
  /** training.max_grad_norm when a grad-norm excursion was clipped back to it. */
  clippedTo?: number;
  alert: Alert;
}

/** The watch's rule: at least this many times the recent level (median of the last LOSS_LEVEL_STEPS)... */
export const LOSS_RATIO = 1.5;
/** ...and this many times the step-to-step noise (median |Δ| over the last LOSS_WINDOW) above it. */
export const LOSS_NOISES = 6;
export const LOSS_LEVEL_STEPS = 5;
/** Preceding finite losses looked at, and the fewest that allow a judgement. */
export const LOSS_WINDOW = 20;
export const LOSS_MIN_HISTORY = 5;
/**
 * A gradient norm is a spike at this many times its recent level (with LOSS_NOISES as for the loss).
 * Higher than the loss's: a healthy norm wanders by 2-4× from step to step (tiny-cpu's first run has
 * 1.4 → 5.0 at step 22; a clipped run of ~2.5 against a norm of 1 is issue 18's healthy one), while the
 * excursions worth a line are an order of magnitude and more (tiny-cpu's step 14: 42×).
 */
export const GRAD_NORM_RATIO = 10;

type Config = { training?: { max_grad_norm?: unknown } } | undefined;

/** The clipping threshold a config sets, or undefined when clipping is off. */
export function clippingOf(config: unknown): number | undefined {
  const clip = (config as Config)?.training?.max_grad_norm;
  return typeof clip === 'number' && clip > 0 ? clip : undefined;
}

/**
 * How loudly an anomaly the runtime reported deserves to be told: NaN and Inf are errors; a loss
 * spike is a warning; a grad-norm spike is a warning only when clipping is off or the update was
 * skipped for it — otherwise clipping absorbed it and it is a marker.
 */
export function anomalyAlert(event: AnomalyEvent, config: unknown): Alert {
  if (event.kind !== 'spike') return 'error';
  if (event.metric !== 'grad_norm') return 'warning';
  return clippingOf(config) !== undefined && event.action !== 'skip' ? 'marker' : 'warning';
}

/** A spike as the runtime reported it. */
export function spikeFromAnomaly(event: AnomalyEvent, config: unknown): Spike {
  const metric: SpikeMetric = event.metric === 'grad_norm' ? 'grad_norm' : 'loss';
  const clip = clippingOf(config);
  const value = event.value ?? Number.NaN;
  return {
    step: event.step,
    metric,
    value,
    ...(event.zscore != null ? { zscore: event.zscore } : {}),
    source: 'runtime',
    action: event.action === 'skip' ? 'skip' : 'report',
    ...(metric === 'grad_norm' && clip !== undefined && value > clip ? { clippedTo: clip } : {}),
    alert: anomalyAlert(event, config),
  };
}

/**
 * The watch's loss rule at one point: the spike, or undefined. `before` holds the preceding finite
 * values, oldest first. The level is the median of the last few (a falling loss is judged against
 * where it is now, not where it was); the noise is the median step-to-step change, which a trend
 * does not inflate the way a spread around the mean would. Runs over every step of a run (a
 * million on attach), so it allocates nothing and looks at the noise only after the cheap test.
 */
export function judgeLoss(step: number, value: number, before: ArrayLike<number>): Spike | undefined {
  return judge('loss', step, value, before);
}

/**
 * The watch's rule for either metric. A grad-norm spike above the config's clipping threshold is
 * what clipping is for: a marker (as the runtime's is, anomalyAlert), clipped to the threshold.
 */
function judge(
  metric: SpikeMetric,
  step: number,
  value: number,
  before: ArrayLike<number>,
  config?: unknown,
): Spike | undefined {
  const n = before.length;
  if (!Number.isFinite(value) || n < LOSS_MIN_HISTORY) return undefined;
  const k = Math.min(LOSS_LEVEL_STEPS, n);
  for (let i = 0; i < k; i++) levelScratch[i] = before[n - 1 - i];
  const baseline = sortedMedian(levelScratch, k);
  if (!(baseline > 0) || value < (metric === 'loss' ? LOSS_RATIO : GRAD_NORM_RATIO) * baseline) return undefined;
  const diffs = n - 1 <= diffScratch.length ? diffScratch : new Float64Array(n - 1);
  for (let i = 0; i < n - 1; i++) diffs[i] = Math.abs(before[i + 1] - before[i]);
  const noise = sortedMedian(diffs, n - 1);
  if (value - baseline < LOSS_NOISES * noise) return undefined;
  const clip = metric === 'grad_norm' ? clippingOf(config) : undefined;
  const clipped = clip !== undefined && value > clip;
  return {
    step,
    metric,
    value,
    baseline,
    ratio: value / baseline,
    source: 'watch',
    action: 'report',
    ...(clipped ? { clippedTo: clip } : {}),
    alert: clipped ? 'marker' : 'warning',
  };
}

const levelScratch = new Float64Array(LOSS_LEVEL_STEPS);
const diffScratch = new Float64Array(LOSS_WINDOW);

/** The median of a[0..k), sorting it in place (an insertion sort: k is at most a few dozen). */
function sortedMedian(a: Float64Array, k: number): number {
  for (let i = 1; i < k; i++) {
    const v = a[i];
    let j = i;
    while (j > 0 && a[j - 1] > v) a[j] = a[--j];
    a[j] = v;
  }
  return k % 2 ? a[(k - 1) >> 1] : (a[k / 2 - 1] + a[k / 2]) / 2;
}

/**
 * Every spike of a run, kept up to date as its history grows: the runtime's anomaly events and
 * the watch's loss rule, one entry per (step, metric), sorted by step. Incremental: a new step
 * costs one judgement over LOSS_WINDOW values; a resume or rollback that rewrote steps is re-read.
 */
export class SpikeFinder {
  private found: Spike[] = [];
  private readonly reported = new Set<string>();
  private anomaliesDone = 0;
  /** The watch rule's progress over each series: how far it read, at which rewrite, what it found. */
  private readonly watched = {
    loss: { done: 0, rewrites: -1, spikes: [] as Spike[] },
    grad_norm: { done: 0, rewrites: -1, spikes: [] as Spike[] },
  };

  constructor(private readonly history: RunHistory) {}

  /** All spikes so far. */
  spikes(): readonly Spike[] {
    this.update();
    return this.found;
  }

  /**
   * Spikes not returned by an earlier call (for notifications: each spike once). A spike both the
   * runtime and the watch saw is returned once.
   */
  newSpikes(): Spike[] {
    this.update();
    const fresh = this.found.filter((s) => !this.reported.has(keyOf(s)));
    for (const s of fresh) this.reported.add(keyOf(s));
    return fresh;
  }

  private update(): void {
    const anomalies = this.history.anomalies;
    const config = this.history.start?.config;
    let changed = false;
    for (const metric of ['loss', 'grad_norm'] as const) {
      const series = this.history.step[metric];
      const w = this.watched[metric];
      if (series.rewrites !== w.rewrites || series.length < w.done) {
        w.rewrites = series.rewrites;
        w.done = 0;
        w.spikes = [];
        changed = true;
      }
      if (series.length > w.done) {
        w.spikes.push(...seriesSpikes(metric, series, w.done, w.spikes, config));
        w.done = series.length;
        changed = true;
      }
    }
    if (anomalies.length !== this.anomaliesDone) changed = true;
    if (!changed) return;
    this.anomaliesDone = anomalies.length;
    const byKey = new Map<string, Spike>();
    for (const s of [...this.watched.loss.spikes, ...this.watched.grad_norm.spikes]) byKey.set(keyOf(s), s);
    for (const a of anomalies) {
      if (a.kind !== 'spike') continue;
      const s = spikeFromAnomaly(a, config);
      const seen = byKey.get(keyOf(s));
      // Seen by both: the runtime's event (its action, z-score) with the watch's baseline.
      byKey.set(keyOf(s), seen ? { ...seen, ...s, baseline: seen.baseline, ratio: seen.ratio } : s);
    }
    this.found = [...byKey.values()].sort((a, b) => a.step - b.step || (a.metric === 'loss' ? -1 : 1));
  }
}

function keyOf(s: Spike): string {
  return `${s.metric}@${s.step}`;
}

/**
 * The watch rule over a loss series from index `from` on. A jump that lasts is one spike: the
 * steps right after a spike (while it is still in the recent level) are not judged again.
 * `earlier` are the spikes already found before `from`.
 */
export function lossSpikes(loss: StepSeries, from = 0, earlier: readonly Spike[] = []): Spike[] {
  return seriesSpikes('loss', loss, from, earlier);
}

/** The watch rule over a loss or grad-norm series (lossSpikes); `config` gives the clipping threshold. */
function seriesSpikes(
  metric: SpikeMetric,
  series: StepSeries,
  from: number,
  earlier: readonly Spike[],
  config?: unknown,
): Spike[] {
  const steps = series.steps;
  const values = series.values;
  const out: Spike[] = [];
  const window: number[] = [];
  // Finite values seen since the last spike (a spike within the last few: judge nothing yet).
  let sinceSpike = Infinity;
  const lastEarlier = earlier.length ? earlier[earlier.length - 1].step : -Infinity;
  // The window before `from`: the finite values just before it.
  for (let i = from - 1; i >= 0 && window.length < LOSS_WINDOW; i--) {
    if (!Number.isFinite(values[i])) continue;
    if (steps[i] === lastEarlier) sinceSpike = window.length;
    window.unshift(values[i]);
  }
  for (let i = from; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    const spike = sinceSpike < LOSS_LEVEL_STEPS ? undefined : judge(metric, steps[i], v, window, config);
    if (spike) out.push(spike);
    sinceSpike = spike ? 0 : sinceSpike + 1;
    window.push(v);
    if (window.length > LOSS_WINDOW) window.shift();
  }
  return out;
}

/** One line about a spike, values rounded: "loss 2.2× its recent level (3.961 → 8.714)". */
export function describeSpike(s: Spike): string {
  const v = roundForDisplay(s.value);
  if (s.metric === 'loss') {
    const jump =
      s.baseline !== undefined && s.ratio !== undefined
        ? `${s.ratio.toFixed(1)}× its recent level (${roundForDisplay(s.baseline)} → ${v})`
        : `spike to ${v}`;
    return `loss ${jump}${s.action === 'skip' ? '; update skipped' : ''}`;
  }
  const clipped = s.clippedTo !== undefined ? `, clipped to ${roundForDisplay(s.clippedTo)}` : '';
  const jump =
    s.baseline !== undefined && s.ratio !== undefined
      ? `, ${s.ratio.toFixed(0)}× its recent level (${roundForDisplay(s.baseline)})`
      : '';
  return `gradient norm ${v}${s.zscore !== undefined ? ` (z = ${s.zscore.toFixed(1)})` : ''}${jump}${clipped}${s.action === 'skip' ? '; update skipped' : ''}`;
}
