// What the dashboard's charts show for a view of a run: each series downsampled to the charts'
// width over the visible range, on the x axis the person chose (step, wall-clock, elapsed), every
// measured series with its EMA (computed on the raw points first, so zooming never changes the
// curve), reference lines for what was planned or set (memory plan, clipping threshold), and the
// markers each chart reads (checkpoints, skipped steps, spikes, NaN).
import type { ChartFrame, ChartMarker, ChartSeries, XAxisFrame } from '../panels/chart-messages';
import type { XRange } from './downsample';
import { roundForDisplay } from './number-format';
import type { RunHistory } from './run-history';
import { SmoothedSeries } from './smoothing';
import { clippingOf, describeSpike, SpikeFinder } from './spikes';
import { upperBound } from './sorted-search';
import type { StepSeries } from './step-series';
import { SeriesTimes, seriesPoints, seriesPointsMany, type XAxisMode } from './x-axis';

export interface ChartView {
  /** Visible x range, in the units of `xAxis`; null follows the whole run. */
  range: XRange | null;
  /** Plot width in pixels. */
  width: number;
  /** EMA weight for the smoothed lines, 0 ≤ w < 1 (0: raw lines only). */
  smoothing: number;
  xAxis: XAxisMode;
}

export interface ChartsForView {
  charts: ChartFrame[];
  xAxis: XAxisFrame;
  extent?: XRange;
  totalPoints: number;
}

export class DashboardCharts {
  private readonly smoothed = new Map<StepSeries, SmoothedSeries>();
  private readonly times = new Map<StepSeries, SeriesTimes>();
  readonly spikes: SpikeFinder;

  constructor(private readonly history: RunHistory) {
    this.spikes = new SpikeFinder(history);
  }

  build(view: ChartView): ChartsForView {
    const h = this.history;
    const range = view.range ?? undefined;
    const width = Math.max(50, Math.min(8192, Math.round(view.width)));
    const mode = view.xAxis;
    const origin = this.origin();
    const points = (s: StepSeries, values: ArrayLike<number> = s.values) =>
      seriesPoints(s.steps, () => this.timesOf(s), values, mode, range, width, origin);
    const plain = (label: string, s: StepSeries, sparse = false): ChartSeries => ({
      label,
      points: points(s),
      ...(sparse ? { sparse } : {}),
    });
    // A measured series: raw, and its EMA beside it when smoothing is on.
    const measured = (label: string, s: StepSeries): ChartSeries[] => {
      if (view.smoothing <= 0) return [plain(label, s)];
      const [raw, ema] = seriesPointsMany(
        s.steps,
        () => this.timesOf(s),
        [s.values, this.smoothedOf(s).values(view.smoothing)],
        mode,
        range,
        width,
        origin,
      );
      return [
        { label, points: raw, role: 'raw' },
        { label: `${label} (EMA ${view.smoothing.toFixed(2)})`, points: ema, role: 'smoothed', colourOf: label },
      ];
    };
    const loss = h.step.loss;
    const extent = this.extent(loss, mode, origin);
    const reference = (label: string, value: number): ChartSeries => {
      const span = range ?? extent ?? { min: 0, max: 1 };
      return { label, points: { x: [span.min, span.max], y: [value, value] }, sparse: true, role: 'reference' };
    };

    const markers = this.markers(mode, origin, range);
    const lossSeries = measured('loss', loss);
    if (h.valLoss.length) lossSeries.push(plain('val loss', h.valLoss, true));
    const clip = clippingOf(h.start?.config);
    const gradSeries = measured('grad norm', h.step.grad_norm);
    if (clip !== undefined && h.step.grad_norm.length)
      gradSeries.push(reference(`clipped at ${roundForDisplay(clip)}`, clip));
    const charts: ChartFrame[] = [
      { id: 'loss', title: 'Loss', unit: 'number', series: lossSeries, markers: markers.loss },
      {
        id: 'lr',
        title: 'Learning rate',
        unit: 'number',
        series: [plain('lr', h.step.lr)],
        tooltip: "The schedule's value at each step (not smoothed: it is set, not measured).",
      },
      {
        id: 'grad_norm',
        title: 'Gradient norm',
        unit: 'number',
        series: gradSeries,
        markers: markers.gradNorm,
        ...(clip !== undefined ? { note: `before clipping; clipped at ${roundForDisplay(clip)}` } : {}),
      },
      {
        id: 'tokens_per_s',
        title: 'Throughput',
        unit: 'per_s',
        series: measured('tokens/s', h.step.tokens_per_s),
        note: 'tokens per second, all ranks',
      },
    ];
    if (h.step.mfu.length) charts.push(this.mfuChart(measured('MFU', h.step.mfu)));
    charts.push(this.memoryChart(measured, reference));
    for (const chart of charts) {
      const why = chart.series.some((s) => s.role !== 'reference' && s.points.x.length > 0)
        ? undefined
        : this.whyEmpty(chart.id, range !== undefined);
      if (why) chart.empty = why;
    }
    return {
      charts,
      xAxis: { mode, ...(mode === 'elapsed' ? { origin } : {}) },
      ...(extent ? { extent } : {}),
      totalPoints: loss.length,
    };
  }

  private mfuChart(series: ChartSeries[]): ChartFrame {
    const chart: ChartFrame = { id: 'mfu', title: 'MFU', unit: 'ratio', series };
    const peak = this.history.mfuPeak;
    const words = peak.describe();
    if (!words || !peak.current) return { ...chart, note: 'the run did not say what peak it is measured against' };
    return { ...chart, ...words, peak: peak.current };
  }

  /** Allocator peak and resident memory per rank as separate lines, the plan dashed. */
  private memoryChart(
    measured: (label: string, s: StepSeries) => ChartSeries[],
    reference: (label: string, value: number) => ChartSeries,
  ): ChartFrame {
    const h = this.history;
    const ranks = [...new Set([...h.memoryByRank.keys(), ...h.residentByRank.keys(), ...h.gpuUsedByRank.keys()])].sort(
      (a, b) => a - b,
    );
    const suffix = (r: number) => (ranks.length > 1 ? `, rank ${r}` : '');
    const series: ChartSeries[] = [];
    for (const r of ranks) {
      const peak = h.memoryByRank.get(r);
      if (peak?.length) series.push(...measured(`allocator peak${suffix(r)}`, peak));
      const rss = h.residentByRank.get(r);
      if (rss?.length) series.push(...measured(`resident (RSS)${suffix(r)}`, rss));
      const gpu = h.gpuUsedByRank.get(r);
      if (gpu?.length) series.push(...measured(`GPU memory used (NVML)${suffix(r)}`, gpu));
    }
    const plan = h.start?.memory_plan?.total;
    if (plan && series.length) series.push(reference('plan', plan));
    const what = [
      'allocator peak per step',
      ...(h.residentByRank.size ? ['resident memory of the process'] : []),
      ...(h.gpuUsedByRank.size ? ['GPU memory in use'] : []),
    ];
    return {
      id: 'memory',
      title: ranks.length > 1 ? 'Memory per rank' : 'Memory',
      unit: 'bytes',
      series,
      note: `${what.join(', ')}${plan ? '; dashed: the plan' : ''}`,
      tooltip:
        "Allocator peak: the most bytes the runtime's allocator held during the step (what the plan counts). Resident: what the operating system counts for the process (RSS), or NVML for the GPU — libraries, code and buffers the allocator does not see.",
    };
  }

  /** Why a chart has nothing to draw, in words: no steps yet, nothing in the zoomed range, or a metric this run does not report. */
  private whyEmpty(id: string, zoomed: boolean): string {
    const h = this.history;
    if (h.lastStep === undefined) return 'No steps yet.';
    if (zoomed) return 'Nothing in the range shown.';
    if (id === 'memory') {
      return h.start?.memory_plan
        ? 'No memory reported yet.'
        : "No memory reported: FSDP Studio's runtime reports its allocator's peak and the process's resident memory with every step; this run's trainer reports none (PyTorch keeps no allocator peak on the CPU; torch.cuda's is for GPUs). Log it from the script — fsdp_studio.log(step, rss_bytes=…) or a TensorBoard scalar — and it is charted under all scalars.";
    }
    return 'Not reported by this run.';
  }

  /** Markers of the loss chart (checkpoints, skipped steps, NaN/Inf, loss spikes) and of the grad-norm chart. */
  private markers(
    mode: XAxisMode,
    origin: number,
    range: XRange | undefined,
  ): { loss: ChartMarker[]; gradNorm: ChartMarker[] } {
    const at = (step: number) => this.xOfStep(step, mode, origin);
    const inView = (m: ChartMarker) => !range || (m.x >= range.min && m.x <= range.max);
    const loss: ChartMarker[] = [];
    const gradNorm: ChartMarker[] = [];
    for (const m of this.history.markers)
      if (m.kind !== 'spike') loss.push({ x: at(m.step), step: m.step, kind: m.kind, label: m.label });
    // Spikes as the one spike rule sees them: a grad-norm excursion clipping absorbed is 'clipped'.
    for (const s of this.spikes.spikes()) {
      const marker: ChartMarker = {
        x: at(s.step),
        step: s.step,
        kind: s.alert === 'marker' ? 'clipped' : 'spike',
        label: describeSpike(s),
      };
      (s.metric === 'loss' ? loss : gradNorm).push(marker);
    }
    loss.sort((a, b) => a.x - b.x);
    return { loss: loss.filter(inView), gradNorm: gradNorm.filter(inView) };
  }

  /** The x of a step in a mode (its time, or time since the start). */
  private xOfStep(step: number, mode: XAxisMode, origin: number): number {
    if (mode === 'step') return step;
    const clock = this.history.step.time;
    const k = upperBound(clock.steps, step) - 1;
    const t = k >= 0 ? clock.values[k] : clock.length ? clock.values[0] : origin;
    return mode === 'elapsed' ? t - origin : t;
  }

  private extent(loss: StepSeries, mode: XAxisMode, origin: number): XRange | undefined {
    if (!loss.length) return undefined;
    if (mode === 'step') return { min: loss.steps[0], max: loss.lastStep! };
    const t = this.timesOf(loss);
    const shift = mode === 'elapsed' ? origin : 0;
    return { min: t[0] - shift, max: t[t.length - 1] - shift };
  }

  /** When the run began: its first run_start, else its first step. */
  private origin(): number {
    return this.history.firstStartTime ?? (this.history.step.time.length ? this.history.step.time.values[0] : 0);
  }

  private smoothedOf(s: StepSeries): SmoothedSeries {
    let out = this.smoothed.get(s);
    if (!out) this.smoothed.set(s, (out = new SmoothedSeries(s)));
    return out;
  }

  private timesOf(s: StepSeries): Float64Array {
    let out = this.times.get(s);
    if (!out) this.times.set(s, (out = new SeriesTimes(s, this.history.step.time)));
    return out.values();
  }
}
