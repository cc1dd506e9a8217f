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
export function downsampleToView(xs: ArrayLike<number>, ys: ArrayLike<number>, range: XRange | undefined, columns: number): Points {
  const n = xs.length;
  if (n === 0) return { x: [], y: [] };
  const min = range?.min ?? xs[0];
  const max = range?.max ?? xs[n - 1];
  let first = lowerBound(xs, min);
  let end = upperBound(xs, max);
  if (first > 0) first--;
  if (end < n) end++;
  const out: Points = { x: [], y: [] };
  const push = (i: number) => {
    out.x.push(xs[i]);
    out.y.push(Number.isFinite(ys[i]) ? ys[i] : null);
  };
  const cols = Math.max(1, Math.floor(columns));
  if (end - first <= 4 * cols) {
    for (let i = first; i < end; i++) push(i);
    return out;
  }
  const span = max - min || 1;
  let i = first;
  // Points outside [min, max] (at most one each side) go through as they are.
  while (i < end && xs[i] < min) push(i++);
  let col = 0;
  const picks = new Int32Array(5);
  while (i < end && xs[i] <= max) {
    // The column of xs[i]; columns advance monotonically, so no division per point.
    while (col < cols - 1 && xs[i] >= min + ((col + 1) * span) / cols) col++;
    const colEnd = col === cols - 1 ? max : min + ((col + 1) * span) / cols;
    const colStart = i;
    let lo = -1;
    let hi = -1;
    let gap = -1;
    for (; i < end && (xs[i] < colEnd || (col === cols - 1 && xs[i] <= max)); i++) {
      const v = ys[i];
      if (v !== v || v === Infinity || v === -Infinity) {
        if (gap < 0) gap = i;
        continue;
      }
      if (lo < 0 || v < ys[lo]) lo = i;
      if (hi < 0 || v > ys[hi]) hi = i;
    }
    const last = i - 1;
    // A non-finite value inside a column is kept as a gap, so a NaN never disappears by zooming out.
    // In index order, each once; an insertion sort of at most five, without allocating.
    let n = 0;
    for (const p of [colStart, lo, hi, gap, last]) {
      if (p < 0) continue;
      let k = n++;
      while (k > 0 && picks[k - 1] > p) picks[k] = picks[--k];
      picks[k] = p;
    }
    for (let k = 0; k < n; k++) if (k === 0 || picks[k] !== picks[k - 1]) push(picks[k]);
  }
  while (i < end) push(i++);
  return out;
}
