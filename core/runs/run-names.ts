// Names that tell runs apart wherever several are named together (Compare's legend, table and tab,
// dashboard tabs, pickers): two runs of one config share a title, so a shared title gets the run's
// start time, and where even that is shared (started in the same second), its id.

export interface NamedRun {
  title: string;
  /** When it started, ms since the epoch, where known. */
  startedAt?: number;
  id: string;
}

export function distinctNames(runs: readonly NamedRun[], formatStart: (ms: number) => string = defaultStart): string[] {
  const titles = runs.map((r) => r.title);
  const shared = (list: string[], i: number) => list.indexOf(list[i]) !== list.lastIndexOf(list[i]);
  const withStart = runs.map((r, i) =>
    shared(titles, i) && r.startedAt !== undefined ? `${r.title} · ${formatStart(r.startedAt)}` : r.title,
  );
  return withStart.map((name, i) => (shared(withStart, i) ? `${name} · ${runs[i].id}` : name));
}

/** "Nov 26, 01:05:12" in the person's locale. */
export function defaultStart(ms: number): string {
  return new Date(ms).toLocaleString(undefined, {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}
