// What the compare view's charts show: for each metric a chart with one line per run — training
// loss, validation loss, learning rate, gradient norm, throughput — smoothed with the same EMA as
// the dashboard (one line per run: the smoothed one when smoothing is on), downsampled to the
// chart's width, on the chosen x axis (elapsed time counts from each run's own start).
import type { ChartFrame, ChartSeries, XAxisFrame } from '../panels/chart-messages';
import type { XRange } from './downsample';
import type { ChartView } from './dashboard-charts';
import type { RunHistory, StepMetric } from './run-history';
import { SmoothedSeries } from './smoothing';
import type { StepSeries } from './step-series';
import { SeriesTimes, seriesPoints } from './x-axis';

export interface ComparedRun {
  label: string;
  history: RunHistory;
}

interface MetricChart {
  id: string;
  title: string;
  unit: ChartFrame['unit'];
  series(h: RunHistory): StepSeries;
  /** Drawn as points joined across gaps (few values, e.g. an eval every N steps). */
  sparse?: boolean;
  /** Set, not measured: never smoothed. */
  raw?: boolean;
}

const METRIC = (id: StepMetric, title: string, unit: ChartFrame['unit'], raw = false): MetricChart => ({
  id,
  title,
  unit,
  series: (h) => h.step[id],
  ...(raw ? { raw } : {}),
});

export const COMPARED_METRICS: readonly MetricChart[] = [
  METRIC('loss', 'Loss', 'number'),
  { id: 'val_loss', title: 'Validation loss', unit: 'number', series: (h) => h.valLoss, sparse: true, raw: true },
  METRIC('lr', 'Learning rate', 'number', true),
  METRIC('grad_norm', 'Gradient norm', 'number'),
  METRIC('tokens_per_s', 'Throughput', 'per_s'),
];

export class CompareCharts {
  private readonly smoothed = new Map<StepSeries, SmoothedSeries>();
  private readonly times = new Map<StepSeries, SeriesTimes>();

  constructor(private readonly runs: readonly ComparedRun[]) {}

  build(view: ChartView): { charts: ChartFrame[]; xAxis: XAxisFrame; extent?: XRange } {
    const range = view.range ?? undefined;
    const width = Math.max(50, Math.min(8192, Math.round(view.width)));
    const charts: ChartFrame[] = [];
    for (const metric of COMPARED_METRICS) {
      const per = this.runs.map((r) => ({ run: r, s: metric.series(r.history) }));
      // A metric no run reported (validation loss without evals) gets no chart; loss always has one.
      if (metric.id !== 'loss' && per.every(({ s }) => s.length === 0)) continue;
      const series: ChartSeries[] = per.map(({ run, s }) => {
        const values = view.smoothing > 0 && !metric.raw ? this.smoothedOf(s).values(view.smoothing) : s.values;
        const points = seriesPoints(
          s.steps,
          () => this.timesOf(run.history, s),
          values,
          view.xAxis,
          range,
          width,
          origin(run.history),
        );
        return { label: run.label, points, ...(metric.sparse ? { sparse: true } : {}) };
      });
      charts.push({
        id: metric.id,
        title: metric.title,
        unit: metric.unit,
        series,
        ...(view.smoothing > 0 && !metric.raw ? { note: `EMA ${view.smoothing.toFixed(2)}` } : {}),
      });
    }
    let extent: XRange | undefined;
    for (const r of this.runs) {
      const loss = r.history.step.loss;
      if (!loss.length) continue;
      const e =
        view.xAxis === 'step'
          ? { min: loss.steps[0], max: loss.lastStep! }
          : timeExtent(this.timesOf(r.history, loss), view.xAxis === 'elapsed' ? origin(r.history) : 0);
      extent = extent ? { min: Math.min(extent.min, e.min), max: Math.max(extent.max, e.max) } : e;
    }
    // Elapsed time has one origin per run; the axis reads from 0 for all.
    return {
      charts,
      xAxis: { mode: view.xAxis, ...(view.xAxis === 'elapsed' ? { origin: 0 } : {}) },
      ...(extent ? { extent } : {}),
    };
  }

  private smoothedOf(s: StepSeries): SmoothedSeries {
    let out = this.smoothed.get(s);
    if (!out) this.smoothed.set(s, (out = new SmoothedSeries(s)));
    return out;
  }

  private timesOf(h: RunHistory, s: StepSeries): Float64Array {
    let out = this.times.get(s);
    if (!out) this.times.set(s, (out = new SeriesTimes(s, h.step.time)));
    return out.values();
  }
}

function origin(h: RunHistory): number {
  return h.firstStartTime ?? (h.step.time.length ? h.step.time.values[0] : 0);
}

function timeExtent(t: Float64Array, shift: number): XRange {
  return { min: t[0] - shift, max: t[t.length - 1] - shift };
}
