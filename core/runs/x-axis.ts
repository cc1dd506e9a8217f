// The x axis of the charts: optimizer step, wall-clock time, or time elapsed since the run began
// (TensorBoard's STEP / WALL / RELATIVE). Every series is stored by step; its x values in the time
// modes come from the run's own step times (the step events' `time`), looked up once per point and
// kept, extended as the run grows and recomputed when a resume or rollback rewrote steps.
import { downsampleManyToView, type Points, type XRange } from './downsample';
import { upperBound } from './sorted-search';
import type { StepSeries } from './step-series';

export type XAxisMode = 'step' | 'time' | 'elapsed';
export const X_AXIS_MODES: readonly XAxisMode[] = ['step', 'time', 'elapsed'];

export function isXAxisMode(v: unknown): v is XAxisMode {
  return typeof v === 'string' && (X_AXIS_MODES as readonly string[]).includes(v);
}

/**
 * Wall-clock times of a series' steps: the time of the step itself, else of the last step logged
 * before it (an eval after step s, a rank's event), made non-decreasing so the downsampling's
 * binary searches hold even if a clock stepped back.
 */
export class SeriesTimes {
  private out = new Float64Array(0);
  private done = 0;
  private sourceRewrites = -1;
  private clockRewrites = -1;
  private clockLength = 0;

  constructor(
    private readonly source: StepSeries,
    private readonly clock: StepSeries,
  ) {}

  values(): Float64Array {
    const src = this.source;
    const clock = this.clock;
    if (src.rewrites !== this.sourceRewrites || clock.rewrites !== this.clockRewrites || src.length < this.done) {
      this.sourceRewrites = src.rewrites;
      this.clockRewrites = clock.rewrites;
      this.done = 0;
    }
    // Points placed before the clock reached their step (an eval read before its step's time)
    // are placed again once it has.
    if (clock.length !== this.clockLength && this.clockLength > 0) {
      const known = clock.steps[this.clockLength - 1];
      this.done = Math.min(this.done, upperBound(src.steps, known, this.done));
    }
    if (this.out.length < src.length) {
      const grown = new Float64Array(Math.max(64, src.length * 2));
      grown.set(this.out.subarray(0, this.done));
      this.out = grown;
    }
    const steps = src.steps;
    const cs = clock.steps;
    const ct = clock.values;
    let previous = this.done > 0 ? this.out[this.done - 1] : -Infinity;
    for (let i = this.done; i < steps.length; i++) {
      // Per-step metrics have the clock's own steps: no search.
      let t: number;
      if (i < cs.length && cs[i] === steps[i]) t = ct[i];
      else {
        const k = upperBound(cs, steps[i]) - 1;
        t = k >= 0 ? ct[k] : ct.length ? ct[0] : 0;
      }
      if (!(t >= previous)) t = previous;
      this.out[i] = t;
      previous = t;
    }
    this.done = steps.length;
    this.clockLength = clock.length;
    return this.out.subarray(0, this.done);
  }
}

/**
 * Points of one series for a view in the given x mode. `range` is in that mode's units; `origin`
 * (elapsed mode) is the run's start time, subtracted after downsampling so nothing is copied.
 */
export function seriesPoints(
  steps: Float64Array,
  times: (() => Float64Array) | undefined,
  values: ArrayLike<number>,
  mode: XAxisMode,
  range: XRange | undefined,
  width: number,
  origin: number,
): Points {
  return seriesPointsMany(steps, times, [values], mode, range, width, origin)[0];
}

/** The same for several value arrays over the same steps (a metric and its EMA), columns found once. */
export function seriesPointsMany(
  steps: Float64Array,
  times: (() => Float64Array) | undefined,
  values: Array<ArrayLike<number>>,
  mode: XAxisMode,
  range: XRange | undefined,
  width: number,
  origin: number,
): Points[] {
  if (mode === 'step' || !times) return downsampleManyToView(steps, values, range, width);
  const shift = mode === 'elapsed' ? origin : 0;
  const shifted = range ? { min: range.min + shift, max: range.max + shift } : undefined;
  const all = downsampleManyToView(times(), values, shifted, width);
  if (shift) for (const points of all) for (let i = 0; i < points.x.length; i++) points.x[i] -= shift;
  return all;
}
