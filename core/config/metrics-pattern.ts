// A launch spec's metrics.pattern: a person's own format of the step lines their command prints,
// as a regular expression with a named group `step` and one per value. The language server says
// what is wrong with one where it is written; the watch's printed-metrics decoder
// (runs/watch/decoders/printed/) reads lines with it.

/** A person's pattern compiled, or why it cannot be: Python's `(?P<name>…)` is read as `(?<name>…)`. */
export function compileMetricsPattern(pattern: string): RegExp | string {
  let re: RegExp;
  try {
    re = new RegExp(pattern.replace(/\(\?P</g, '(?<'));
  } catch (e) {
    return `not a valid regular expression: ${(e as Error).message}`;
  }
  const groups = [...pattern.matchAll(/\(\?P?<([A-Za-z_]\w*)>/g)].map((m) => m[1]);
  if (!groups.includes('step')) return 'needs a named group step, e.g. (?<step>\\d+)';
  if (groups.length < 2) return 'needs a named group for a value besides step, e.g. (?<loss>[\\d.]+)';
  return re;
}
