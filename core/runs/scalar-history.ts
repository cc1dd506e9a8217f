// Every scalar a run logged, per tag: (step, value, wall time), whatever wrote it — the native
// runtime's step events, the companion's `scalars` events, TensorBoard event files. A later value
// of a step already seen replaces that step and what followed it (a resumed or rolled-back run
// writes those steps again), so each tag has every step once. Tags that mean what a native chart
// shows share that chart's series (RunHistory binds them), so nothing is stored twice.
import { lowerBound } from './sorted-search';
import { StepSeries } from './step-series';

export interface ScalarSeries {
  readonly tag: string;
  readonly values: StepSeries;
  /** Seconds since the Unix epoch when each value was logged, at the same steps as `values`. */
  readonly wallTimes: StepSeries;
}

/** What `fsdp-runs show` prints per tag. */
export interface TagSummary {
  count: number;
  first_step: number;
  last_step: number;
  /** null when the last value was not finite. */
  last_value: number | null;
  /** Seconds since the Unix epoch; null when the writer gave none. */
  last_wall_time: number | null;
}

export class ScalarHistory {
  private readonly byTag = new Map<string, ScalarSeries>();

  /** Tags in the order they first appeared. */
  tags(): string[] {
    return [...this.byTag.keys()];
  }

  get size(): number {
    return this.byTag.size;
  }

  get(tag: string): ScalarSeries | undefined {
    return this.byTag.get(tag);
  }

  /** Makes `tag` store its values in existing series (a native chart's), unless it has its own already. */
  bind(tag: string, values: StepSeries, wallTimes: StepSeries): ScalarSeries {
    let s = this.byTag.get(tag);
    if (!s) {
      s = { tag, values, wallTimes };
      this.byTag.set(tag, s);
    }
    return s;
  }

  /** Adds one value; a step at or before the tag's last one replaces it and what followed. */
  add(tag: string, step: number, value: number | null | undefined, wallTime: number): ScalarSeries {
    const s = this.byTag.get(tag) ?? this.bind(tag, new StepSeries(), new StepSeries());
    s.values.set(step, value);
    s.wallTimes.set(step, wallTime);
    return s;
  }

  /** Forgets every value at or after `step`, in every tag. */
  truncateFrom(step: number): void {
    for (const s of this.byTag.values()) {
      s.values.truncateFrom(step);
      s.wallTimes.truncateFrom(step);
    }
  }

  /** Count, first and last step, last value and its wall time; undefined for a tag without values. */
  summary(tag: string): TagSummary | undefined {
    const s = this.byTag.get(tag);
    if (!s || s.values.length === 0) return undefined;
    const last = s.values.lastStep!;
    const v = s.values.lastValue!;
    // Wall times may be shared with other tags (the native step times): find the step, not the index.
    const i = lowerBound(s.wallTimes.steps, last, s.wallTimes.length);
    const wall = i < s.wallTimes.length && s.wallTimes.steps[i] === last ? s.wallTimes.values[i] : Number.NaN;
    return {
      count: s.values.length,
      first_step: s.values.steps[0],
      last_step: last,
      last_value: Number.isFinite(v) ? v : null,
      last_wall_time: Number.isFinite(wall) ? wall : null,
    };
  }

  /** The largest last step over all tags. */
  lastStep(): number | undefined {
    let last: number | undefined;
    for (const s of this.byTag.values()) {
      const l = s.values.lastStep;
      if (l !== undefined && (last === undefined || l > last)) last = l;
    }
    return last;
  }
}
