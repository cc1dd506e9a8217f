// The smoothed loss line: an exponential moving average with TensorBoard's debiasing (divide by
// 1 - w^k), so the first points are not dragged toward zero. Computed over the raw points in the
// extension host, then downsampled like any series: smoothing downsampled points would change
// the curve with the zoom level.
import type { StepSeries } from './step-series';

/** Smoothing weight in [0, 1): 0 is the raw line, 0.99 very smooth. */
export function clampSmoothing(weight: number): number {
  return Number.isFinite(weight) ? Math.min(0.999, Math.max(0, weight)) : 0;
}

/**
 * The EMA of one series at one weight, extended as points are appended and recomputed when the
 * series was rewound (a resume or rollback replaced steps).
 */
export class SmoothedSeries {
  private out = new Float64Array(0);
  private done = 0;
  private accumulated = 0;
  private finiteCount = 0;
  private weight = -1;
  private rewritesSeen = -1;

  constructor(private readonly source: StepSeries) {}

  /** EMA values aligned with the source's steps (NaN where the source is not finite). */
  values(weight: number): Float64Array {
    const w = clampSmoothing(weight);
    const src = this.source;
    if (w !== this.weight || src.rewrites !== this.rewritesSeen || src.length < this.done) {
      this.weight = w;
      this.rewritesSeen = src.rewrites;
      this.done = 0;
      this.accumulated = 0;
      this.finiteCount = 0;
    }
    if (this.out.length < src.length) {
      const grown = new Float64Array(Math.max(64, src.length * 2));
      grown.set(this.out.subarray(0, this.done));
      this.out = grown;
    }
    const ys = src.values;
    for (let i = this.done; i < ys.length; i++) {
      const v = ys[i];
      if (!Number.isFinite(v)) {
        this.out[i] = Number.NaN;
        continue;
      }
      this.accumulated = this.accumulated * w + (1 - w) * v;
      this.finiteCount++;
      this.out[i] = w === 0 ? v : this.accumulated / (1 - w ** this.finiteCount);
    }
    this.done = ys.length;
    return this.out.subarray(0, this.done);
  }
}
