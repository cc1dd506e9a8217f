// Scale rules of the charts, kept out of the webview so they are tested as plain functions: the y
// range with outliers left out, what a log axis can draw, and the x axis's tick steps (whole steps,
// round durations).

export interface Range {
  min: number;
  max: number;
}

/** Fraction of points each side that may lie outside the clipped range. */
const OUTLIER_QUANTILE = 0.02;
/** Room kept around the bulk, as a fraction of its span (a curve's early, higher part stays in view). */
const MARGIN = 0.5;

/**
 * The y range that shows the bulk of the points when outliers are clipped: the 2nd to 98th
 * percentile (always leaving out the single highest and lowest point), widened by half its span
 * but never past the data. A lone spike no longer flattens the curve. In log mode the same in
 * log10 space, over positive values only. Undefined when there are too few points to judge.
 */
export function clippedRange(series: Array<ArrayLike<number | null | undefined>>, log = false): Range | undefined {
  const values: number[] = [];
  for (const ys of series) {
    for (let i = 0; i < ys.length; i++) {
      const v = ys[i];
      if (v == null || !Number.isFinite(v) || (log && v <= 0)) continue;
      values.push(log ? Math.log10(v) : v);
    }
  }
  if (values.length < 8) return undefined;
  values.sort((a, b) => a - b);
  const n = values.length;
  const lo = values[Math.max(1, Math.floor(OUTLIER_QUANTILE * (n - 1)))];
  const hi = values[Math.min(n - 2, Math.ceil((1 - OUTLIER_QUANTILE) * (n - 1)))];
  const span = hi - lo || Math.abs(hi) * 0.1 || 1;
  const min = Math.max(values[0], lo - MARGIN * span);
  const max = Math.min(values[n - 1], hi + MARGIN * span);
  const pad = (max - min) * 0.05 || span * 0.05;
  const out = { min: min - pad, max: max + pad };
  return log ? { min: 10 ** out.min, max: 10 ** out.max } : out;
}

/** Values a log axis can draw: non-positive ones become gaps. */
export function forLogAxis(ys: ArrayLike<number | null | undefined>): Array<number | null> {
  return Array.from(ys, (v) => (v != null && v > 0 ? v : null));
}

/** Tick steps of a step axis: whole steps only (never 2.5 … 37.5). */
export const STEP_INCREMENTS: number[] = (() => {
  const out: number[] = [];
  for (let p = 1; p <= 1e12; p *= 10) out.push(p, 2 * p, 5 * p);
  return out;
})();

/** Tick steps of an elapsed-time axis, in seconds: round seconds, minutes, hours, days. */
export const DURATION_INCREMENTS: number[] = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
];

/** An elapsed-time tick: 45 s, 12:30 (min:s), 3:05:00 (h:min:s), 2 d 4 h. */
export function formatElapsedTick(seconds: number): string {
  const s = Math.round(seconds);
  const sign = s < 0 ? '-' : '';
  const a = Math.abs(s);
  if (a < 60) return `${sign}${a} s`;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (a < 3600) return `${sign}${Math.floor(a / 60)}:${pad(a % 60)}`;
  if (a < 86400 * 2) return `${sign}${Math.floor(a / 3600)}:${pad(Math.floor((a % 3600) / 60))}:${pad(a % 60)}`;
  return `${sign}${Math.floor(a / 86400)} d ${Math.floor((a % 86400) / 3600)} h`;
}

export type AxisUnit = 'number' | 'bytes' | 'per_s' | 'ratio';

/** Tick steps of a bytes axis: powers of two of B, KiB, MiB, GiB, TiB (32 MiB, 64 MiB, not 38.1 MiB). */
export const BYTE_INCREMENTS: number[] = (() => {
  const out: number[] = [];
  for (let u = 0; u <= 4; u++) for (let m = 1; m < 1024; m *= 2) out.push(m * 1024 ** u);
  out.push(1024 ** 5);
  return out;
})();

/** Decimals needed to write `step` exactly (0.25 → 2, 2.5 → 1, 20 → 0). */
function decimalsOf(step: number): number {
  let d = 0;
  while (d < 12 && Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) > 1e-6) d++;
  return d;
}

/**
 * Labels of one axis's ticks, with as many digits as the tick step needs, so neighbouring ticks
 * never read the same (1000, 1002, 1004 tokens/s, not 1.0k three times).
 */
export function tickLabels(unit: AxisUnit, values: number[], step: number): string[] {
  const finite = values.filter(Number.isFinite);
  const top = Math.max(0, ...finite.map(Math.abs));
  const inc = step > 0 && Number.isFinite(step) ? step : top || 1;
  const fixed = (scale: number, suffix: string) => {
    const d = decimalsOf(inc / scale);
    return values.map((v) => (Number.isFinite(v) ? `${(v / scale).toFixed(d)}${suffix}` : ''));
  };
  switch (unit) {
    case 'bytes': {
      const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
      let u = 0;
      while (top >= 1024 ** (u + 1) && u < units.length - 1) u++;
      return fixed(1024 ** u, ` ${units[u]}`);
    }
    case 'per_s':
      return top >= 1e6 ? fixed(1e6, 'M') : top >= 1e4 ? fixed(1e3, 'k') : fixed(1, '');
    case 'ratio': {
      const d = decimalsOf(inc * 100);
      return values.map((v) => (Number.isFinite(v) ? `${(v * 100).toFixed(d)}%` : ''));
    }
    default: {
      if (top === 0 || (top >= 1e-2 && top < 1e5)) return fixed(1, '');
      // Very small or large: a mantissa with the digits the step needs, trailing zeros dropped.
      const exp = Math.floor(Math.log10(top));
      const d = decimalsOf(inc / 10 ** exp);
      return values.map((v) => (Number.isFinite(v) ? (v === 0 ? '0' : v.toExponential(d).replace(/\.?0+e/, 'e')) : ''));
    }
  }
}
