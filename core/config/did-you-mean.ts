// "Did you mean" suggestions for misspelled keys and enum values.

/** The candidate closest to `word`, if it is close enough to be a plausible typo. */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  // Allow about one edit per three characters, at least one: "FULL_SHRAD" -> "FULL_SHARD" (a
  // transposition) and "gradient_clipp1ng" -> "gradient_clipping" are in, unrelated words are out.
  const limit = Math.max(1, Math.floor(w.length / 3));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    // The distance is at least the difference in length: most candidates are out without a table.
    if (Math.abs(candidate.length - w.length) >= bestDistance) continue;
    const d = editDistance(w, candidate.toLowerCase(), bestDistance - 1);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return best;
}

let table = new Int32Array(0);

/**
 * Optimal string alignment distance: Levenshtein plus adjacent transpositions, each costing 1.
 * With `atMost`, stops as soon as the distance is known to exceed it and returns atMost + 1
 * (a row's smallest entry never decreases further down), so checking every unknown key of a huge
 * config against a schema's keys stays cheap.
 */
export function editDistance(a: string, b: string, atMost = Infinity): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  if (table.length < rows * cols) table = new Int32Array(rows * cols);
  const d = table;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    let rowMin = d[i * cols];
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[(i - 1) * cols + j] + 1, d[i * cols + j - 1] + 1, d[(i - 1) * cols + j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, d[(i - 2) * cols + j - 2] + 1);
      d[i * cols + j] = v;
      if (v < rowMin) rowMin = v;
    }
    // A transposition reaches back two rows: stop only when both rows are past the bound.
    if (rowMin > atMost && i > 1 && minOfRow(d, i - 1, cols) > atMost) return atMost + 1;
  }
  return d[rows * cols - 1];
}

function minOfRow(d: Int32Array, i: number, cols: number): number {
  let m = d[i * cols];
  for (let j = 1; j < cols; j++) if (d[i * cols + j] < m) m = d[i * cols + j];
  return m;
}
