// How many problems a front end shows of one document: a generated file with 100,000 unknown keys
// has 100,000 problems, and neither an editor's problems panel nor a terminal is helped by all of
// them (VS Code would receive tens of megabytes). The first MAX_SHOWN_PROBLEMS, in order, then
// one line that says how many more there are.
import type { ConfigProblem } from './schema-problems';

export const MAX_SHOWN_PROBLEMS = 1000;

/** The first `max` problems, then one that counts the rest (those a check only counted included). */
export function shownProblems(problems: ConfigProblem[], max = MAX_SHOWN_PROBLEMS): ConfigProblem[] {
  const counted = problems.filter((p) => p.code === MORE);
  const listed = counted.length ? problems.filter((p) => p.code !== MORE) : problems;
  if (listed.length <= max && counted.length === 0) return problems;
  const rest = listed.slice(max);
  const count = rest.length + counted.reduce((n, p) => n + (p.more?.count ?? 0), 0);
  const codes = [...new Set([...rest.map((p) => p.code), ...counted.flatMap((p) => p.more?.codes ?? [])])];
  const shown = listed.slice(0, max);
  return [...shown, moreProblems(count, codes, (shown[shown.length - 1] ?? counted[0]).range, max)];
}

const MORE = 'problems.more';

/** The problem that stands for `count` problems not listed, of the given codes. */
export function moreProblems(
  count: number,
  codes: string[],
  at: ConfigProblem['range'],
  max = MAX_SHOWN_PROBLEMS,
): ConfigProblem {
  return {
    severity: 'information',
    path: [],
    code: MORE,
    message: `${count.toLocaleString('en-US')} more problems not shown (${codes.slice(0, 5).join(', ')}${codes.length > 5 ? ', …' : ''}); only the first ${max.toLocaleString('en-US')} are listed`,
    range: { start: at.start, end: at.start },
    more: { count, codes },
  };
}
