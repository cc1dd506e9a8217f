// What the dashboard's charts show for a view of a run: each series downsampled to the charts'
// width over the visible range, the EMA computed on the raw loss first, and the markers in range.
import type { ChartFrame, ChartSeries } from '../panels/dashboard-messages';
import { downsampleToView, type XRange } from './downsample';
import type { RunHistory, RunMarker } from './run-history';
import { SmoothedSeries } from './smoothing';
import type { StepSeries } from './step-series';

export interface ChartView {
  /** Visible steps; null follows the whole run. */
  range: XRange | null;
  /** Plot width in pixels. */
  width: number;
  /** EMA weight for the smoothed loss, 0 ≤ w < 1. */
  smoothing: number;
}

export interface ChartsForView {
  charts: ChartFrame[];
  markers: RunMarker[];
  extent?: XRange;
  totalPoints: number;
}

export class DashboardCharts {
  private readonly smoothedLoss: SmoothedSeries;

  constructor(private readonly history: RunHistory) {
    this.smoothedLoss = new SmoothedSeries(history.step.loss);
  }

  build(view: ChartView): ChartsForView {
    const h = this.history;
    const range = view.range ?? undefined;
    const width = Math.max(50, Math.min(8192, Math.round(view.width)));
    const down = (s: StepSeries, values: ArrayLike<number> = s.values) => downsampleToView(s.steps, values, range, width);
    const series = (label: string, s: StepSeries, sparse = false): ChartSeries => ({ label, points: down(s), ...(sparse ? { sparse } : {}) });
    const loss = h.step.loss;
    const lossSeries: ChartSeries[] = [series('loss', loss)];
    if (view.smoothing > 0) lossSeries.push({ label: `loss (EMA ${view.smoothing.toFixed(2)})`, points: down(loss, this.smoothedLoss.values(view.smoothing)) });
    if (h.valLoss.length) lossSeries.push(series('val loss', h.valLoss, true));
    const charts: ChartFrame[] = [
      { id: 'loss', title: 'Loss', unit: 'number', series: lossSeries },
      { id: 'lr', title: 'Learning rate', unit: 'number', series: [series('lr', h.step.lr)] },
      { id: 'grad_norm', title: 'Gradient norm', unit: 'number', series: [series('grad norm', h.step.grad_norm)] },
      { id: 'tokens_per_s', title: 'Throughput', unit: 'per_s', series: [series('tokens/s', h.step.tokens_per_s)] },
    ];
    if (h.step.mfu.length) charts.push({ id: 'mfu', title: 'MFU', unit: 'ratio', series: [series('MFU', h.step.mfu)] });
    const ranks = [...h.memoryByRank.keys()].sort((a, b) => a - b);
    charts.push({ id: 'memory', title: ranks.length > 1 ? 'Peak memory per rank' : 'Peak memory', unit: 'bytes', series: ranks.map((r) => series(`rank ${r}`, h.memoryByRank.get(r)!)) });
    const first = loss.length ? loss.steps[0] : undefined;
    const last = loss.lastStep;
    const markers = h.markers.filter((m) => !range || (m.step >= range.min && m.step <= range.max));
    return {
      charts,
      markers,
      ...(first !== undefined && last !== undefined ? { extent: { min: first, max: last } } : {}),
      totalPoints: loss.length,
    };
  }
}
