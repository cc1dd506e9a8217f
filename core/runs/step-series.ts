// One metric of a run as (step, value) pairs in growable typed arrays: a million points cost
// 16 MB, not a million objects. Steps are kept strictly increasing, which is how "no doubles" is
// guaranteed: a value for a step at or before the last one replaces everything from that step on
// (the resume and rollback rule of the metrics protocol), it never adds a second point.
import { lowerBound } from './sorted-search';

export class StepSeries {
  private xs = new Float64Array(64);
  private ys = new Float64Array(64);
  private count = 0;
  /** Counts truncations that removed points: caches of derived values (EMA) restart when it moves. */
  rewrites = 0;

  get length(): number {
    return this.count;
  }

  /** Steps of the stored points; a view, valid until the next change. */
  get steps(): Float64Array {
    return this.xs.subarray(0, this.count);
  }

  /** Values of the stored points (NaN where the metric was not finite); a view. */
  get values(): Float64Array {
    return this.ys.subarray(0, this.count);
  }

  get lastStep(): number | undefined {
    return this.count ? this.xs[this.count - 1] : undefined;
  }

  get lastValue(): number | undefined {
    return this.count ? this.ys[this.count - 1] : undefined;
  }

  /** Adds the value of `step`; earlier points of this step or later steps are replaced. */
  set(step: number, value: number | null | undefined): void {
    if (this.count && step <= this.xs[this.count - 1]) this.truncateFrom(step);
    if (this.count === this.xs.length) this.grow();
    this.xs[this.count] = step;
    this.ys[this.count] = value ?? Number.NaN;
    this.count++;
  }

  /** Drops every point whose step is >= `step`. */
  truncateFrom(step: number): void {
    const kept = lowerBound(this.xs, step, this.count);
    if (kept < this.count) this.rewrites++;
    this.count = kept;
  }

  private grow(): void {
    const xs = new Float64Array(this.xs.length * 2);
    const ys = new Float64Array(this.ys.length * 2);
    xs.set(this.xs);
    ys.set(this.ys);
    this.xs = xs;
    this.ys = ys;
  }
}
