// Downsampling to the view, done in the extension host so a webview never receives more points
// than its chart has pixels: for each pixel column the first, lowest, highest and last point
// (the M4 rule), which draws the same polyline as all the points would, at any zoom.
import { lowerBound, upperBound } from './sorted-search';

export interface XRange {
  min: number;
  max: number;
}

export interface Points {
  x: number[];
  /** null where the value was not finite (a gap in the line). */
  y: Array<number | null>;
}

/**
 * Points of (xs, ys) that a chart `columns` pixels wide needs to draw `range` exactly: all of
 * them when few, else at most four per column, plus the nearest point outside each edge so the
 * line reaches the border. xs must be increasing.
 */
export function downsampleToView(
  xs: ArrayLike<number>,
  ys: ArrayLike<number>,
  range: XRange | undefined,
  columns: number,
): Points {
  return downsampleManyToView(xs, [ys], range, columns)[0];
}

/**
 * The same for several series over the same xs (a metric and its EMA): the columns are found once,
 * then each series is scanned column by column.
 */
export function downsampleManyToView(
  xs: ArrayLike<number>,
  ysList: Array<ArrayLike<number>>,
  range: XRange | undefined,
  columns: number,
): Points[] {
  const n = xs.length;
  if (n === 0) return ysList.map(() => ({ x: [], y: [] }));
  const min = range?.min ?? xs[0];
  const max = range?.max ?? xs[n - 1];
  let first = lowerBound(xs, min);
  let end = upperBound(xs, max);
  if (first > 0) first--;
  if (end < n) end++;
  const cols = Math.max(1, Math.floor(columns));
  if (end - first <= 4 * cols) {
    return ysList.map((ys) => {
      const out: Points = { x: [], y: [] };
      for (let i = first; i < end; i++) push(out, xs, ys, i);
      return out;
    });
  }
  const span = max - min || 1;
  // Points outside [min, max] (at most one each side) go through as they are.
  let inside = first;
  while (inside < end && xs[inside] < min) inside++;
  let after = inside;
  while (after < end && xs[after] <= max) after++;
  // starts[c]: index of the first point of column c (columns end where the next one starts).
  const starts = new Int32Array(cols + 1);
  starts[0] = inside;
  for (let c = 1; c < cols; c++) starts[c] = searchFrom(xs, min + (c * span) / cols, starts[c - 1], after);
  starts[cols] = after;
  return ysList.map((ys) => {
    const out: Points = { x: [], y: [] };
    for (let i = first; i < inside; i++) push(out, xs, ys, i);
    for (let c = 0; c < cols; c++) pickColumn(out, xs, ys, starts[c], starts[c + 1]);
    for (let i = after; i < end; i++) push(out, xs, ys, i);
    return out;
  });
}

const picks = new Int32Array(5);

/** A column's first, lowest, highest, first non-finite and last point, in index order, each once. */
function pickColumn(out: Points, xs: ArrayLike<number>, ys: ArrayLike<number>, from: number, to: number): void {
  if (from >= to) return;
  let lo = -1;
  let hi = -1;
  let gap = -1;
  for (let i = from; i < to; i++) {
    const v = ys[i];
    if (v !== v || v === Infinity || v === -Infinity) {
      // A non-finite value inside a column is kept as a gap, so a NaN never disappears by zooming out.
      if (gap < 0) gap = i;
      continue;
    }
    if (lo < 0 || v < ys[lo]) lo = i;
    if (hi < 0 || v > ys[hi]) hi = i;
  }
  // An insertion sort of at most five, without allocating.
  let k = 0;
  for (const p of [from, lo, hi, gap, to - 1]) {
    if (p < 0) continue;
    let j = k++;
    while (j > 0 && picks[j - 1] > p) picks[j] = picks[--j];
    picks[j] = p;
  }
  for (let j = 0; j < k; j++) if (j === 0 || picks[j] !== picks[j - 1]) push(out, xs, ys, picks[j]);
}

function push(out: Points, xs: ArrayLike<number>, ys: ArrayLike<number>, i: number): void {
  out.x.push(xs[i]);
  out.y.push(Number.isFinite(ys[i]) ? ys[i] : null);
}

/** First index in [lo, hi) with xs[i] >= v (hi when none). */
function searchFrom(xs: ArrayLike<number>, v: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
