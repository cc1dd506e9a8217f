// How many problems a front end shows of one document: a generated file with 100,000 unknown keys
// has 100,000 problems, and neither an editor's problems panel nor a terminal is helped by all of
// them (VS Code would receive tens of megabytes). The first MAX_SHOWN_PROBLEMS, in order, then
// one line that says how many more there are.
import type { ConfigProblem } from './schema-problems';

export const MAX_SHOWN_PROBLEMS = 1000;

export function shownProblems(problems: ConfigProblem[], max = MAX_SHOWN_PROBLEMS): ConfigProblem[] {
  if (problems.length <= max) return problems;
  const rest = problems.slice(max);
  const codes = [...new Set(rest.map((p) => p.code))];
  const last = problems[max - 1];
  return [
    ...problems.slice(0, max),
    {
      severity: 'information',
      path: [],
      code: 'problems.more',
      message: `${rest.length.toLocaleString('en-US')} more problems not shown (${codes.slice(0, 5).join(', ')}${codes.length > 5 ? ', …' : ''}); only the first ${max.toLocaleString('en-US')} are listed`,
      range: { start: last.range.start, end: last.range.start },
    },
  ];
}
