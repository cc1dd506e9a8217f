// A run's metrics as CSV, one row per step, for a spreadsheet, pandas or a paper's plot: every
// step metric the run reported, validation loss on the steps that had one, and each rank's memory.
import type { RunHistory } from './run-history';
import { STEP_METRICS } from './run-history';
import { lowerBound } from './sorted-search';
import type { StepSeries } from './step-series';

/** Columns in order; `time` is epoch seconds, `elapsed_s` seconds since the run began. */
export function metricsCsv(h: RunHistory): string {
  const columns: Array<[string, StepSeries]> = [];
  const clock = h.step.time;
  for (const m of STEP_METRICS) if (h.step[m].length && m !== 'time') columns.push([m, h.step[m]]);
  if (h.valLoss.length) columns.push(['val_loss', h.valLoss]);
  const ranks = (byRank: Map<number, StepSeries>, name: string) => {
    const keys = [...byRank.keys()].sort((a, b) => a - b);
    for (const r of keys)
      if (byRank.get(r)!.length) columns.push([keys.length > 1 ? `${name}_rank${r}` : name, byRank.get(r)!]);
  };
  ranks(h.memoryByRank, 'mem_peak');
  ranks(h.residentByRank, 'mem_rss');
  ranks(h.gpuUsedByRank, 'gpu_mem_used');

  // Every step any column has, in order (the step metrics' steps, plus those only memory or eval has).
  const stepSet = new Set<number>();
  for (const s of [clock, ...columns.map(([, c]) => c)]) for (const x of s.steps) stepSet.add(x);
  const steps = [...stepSet].sort((a, b) => a - b);
  const origin = h.firstStartTime ?? (clock.length ? clock.values[0] : undefined);
  const lines = [['step', 'time', 'elapsed_s', ...columns.map(([name]) => name)].join(',')];
  const cursors = columns.map(() => 0);
  let ci = 0;
  for (const step of steps) {
    while (ci < clock.length && clock.steps[ci] < step) ci++;
    const time = ci < clock.length && clock.steps[ci] === step ? clock.values[ci] : undefined;
    const row = [
      String(step),
      time !== undefined ? time.toFixed(3) : '',
      time !== undefined && origin !== undefined ? (time - origin).toFixed(3) : '',
    ];
    columns.forEach(([, series], k) => {
      let i = cursors[k];
      if (i < series.length && series.steps[i] < step) i = lowerBound(series.steps, step);
      cursors[k] = i;
      row.push(i < series.length && series.steps[i] === step ? cell(series.values[i]) : '');
    });
    lines.push(row.join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** A value as CSV reads it back exactly; a non-finite one as NaN (pandas and spreadsheets read it). */
function cell(v: number): string {
  return Number.isFinite(v) ? String(v) : 'NaN';
}
