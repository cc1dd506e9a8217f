// A run's tooltip in the runs view, as plain text: a run's name, its host and its end reason come
// from run folders and people (a name can hold `[a](https://…)` or `![](https://…/pixel.png)`),
// and a Markdown tooltip would render them as a link or fetch a remote image. A string tooltip is
// shown as written; its line breaks stay line breaks.
export interface RunTooltipFacts {
  title: string;
  target: string;
  runId: string;
  /** When it started, as the view writes it; absent when not known. */
  started?: string;
  runDir: string;
  /** Why it ended, when it did not complete. */
  reason?: string;
}

export function runTooltip(f: RunTooltipFacts): string {
  return [
    `${f.title} — ${f.target}`,
    `id ${f.runId}${f.started ? `, started ${f.started}` : ''}`,
    f.runDir,
    ...(f.reason ? ['', f.reason] : []),
  ].join('\n');
}
