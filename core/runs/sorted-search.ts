// Binary searches over increasing arrays (steps of a series), shared by storage and downsampling.

/** First index i with xs[i] >= v (xs.length when none). */
export function lowerBound(xs: ArrayLike<number>, v: number, end = xs.length): number {
  let lo = 0;
  let hi = end;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index i with xs[i] > v (xs.length when none). */
export function upperBound(xs: ArrayLike<number>, v: number, end = xs.length): number {
  let lo = 0;
  let hi = end;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
