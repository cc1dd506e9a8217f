// One uPlot chart over the run's x axis (step, wall-clock or elapsed time), themed with VS Code's
// colours, with the interactions the dashboard, the compare view and the spike view share: drag to
// zoom, wheel to zoom at the cursor, shift-drag to pan, double-click to follow the whole run again;
// a log y axis and outlier clipping per chart; whole-step ticks; y labels measured so they always
// fit; markers with their label under the cursor; and a PNG of the chart for export. The chart
// never computes the points itself: it reports the range it wants and the host sends them.
import uPlot from 'uplot';
import type { ChartFrame, ChartMarker, ChartSeries, XAxisFrame } from '../../core/panels/chart-messages';
import {
  BYTE_INCREMENTS,
  clippedRange,
  DURATION_INCREMENTS,
  formatElapsedTick,
  forLogAxis,
  STEP_INCREMENTS,
  tickLabels,
} from '../../core/runs/chart-scales';
import type { XRange } from '../../core/runs/downsample';
import { chartPng } from './chart-png';

export type Unit = ChartFrame['unit'];

export interface StepChartOptions {
  title: string;
  unit: Unit;
  height?: number;
  /** Called when the person zooms or pans (null: back to following the run). */
  onRange(range: XRange | null): void;
  /** Called after every draw with its duration, for the frame-time figures. */
  onDraw?(ms: number): void;
}

/** What the person chose for this chart. */
export interface YOptions {
  log: boolean;
  clip: boolean;
}

export const PALETTE = [
  '--vscode-charts-blue',
  '--vscode-charts-orange',
  '--vscode-charts-green',
  '--vscode-charts-purple',
  '--vscode-charts-red',
  '--vscode-charts-yellow',
];
export const MARKER_COLOURS: Record<ChartMarker['kind'], string> = {
  checkpoint: '--vscode-charts-blue',
  skipped: '--vscode-charts-orange',
  spike: '--vscode-charts-yellow',
  clipped: '--vscode-descriptionForeground',
  nan: '--vscode-charts-red',
  inf: '--vscode-charts-red',
};
const AXIS_FONT_PX = 11;
/** Ticks (uPlot's default size) plus the gap between them and the labels, plus breathing room. */
const AXIS_EXTRA_PX = 10 + 5 + 6;

export function themeColour(variable: string, fallback = '#888'): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

export function axisFont(): string {
  return `${AXIS_FONT_PX}px ${getComputedStyle(document.body).fontFamily || 'sans-serif'}`;
}

export class StepChart {
  readonly element: HTMLElement;
  private plot: uPlot | undefined;
  private identity = '';
  private series: ChartSeries[] = [];
  private range: XRange | null = null;
  private markers: ChartMarker[] = [];
  private xAxis: XAxisFrame = { mode: 'step' };
  private y: YOptions = { log: false, clip: false };
  private data: uPlot.AlignedData = [[]];
  private drawStarted = 0;
  private readonly measure = document.createElement('canvas').getContext('2d')!;

  constructor(private readonly opts: StepChartOptions) {
    this.element = document.createElement('div');
    this.element.className = 'step-chart';
  }

  /** The points drawn now: x and one array per series (what a reader of the chart sees). */
  points(): { x: number[]; series: Array<{ label: string; y: Array<number | null | undefined> }> } {
    const [x, ...ys] = this.data as unknown as [number[], ...Array<Array<number | null | undefined>>];
    return { x: [...x], series: ys.map((y, i) => ({ label: this.series[i]?.label, y: [...y] })) };
  }

  /** For tests: the y axis's tick labels, its width, and the widest label's width in pixels. */
  yAxis(): { labels: string[]; size: number; widest: number; min: number; max: number; log: boolean } | undefined {
    const u = this.plot;
    if (!u) return undefined;
    const axis = u.axes[1] as uPlot.Axis & { _values?: string[]; _size?: number };
    const labels = (axis._values ?? []).map(String);
    this.measure.font = axisFont();
    const widest = Math.max(0, ...labels.map((l) => this.measure.measureText(l).width));
    return {
      labels,
      size: axis._size ?? 0,
      widest,
      min: u.scales.y.min ?? NaN,
      max: u.scales.y.max ?? NaN,
      log: u.scales.y.distr === 3,
    };
  }

  /** For tests: the x axis's tick labels and values. */
  xTicks(): { labels: string[]; values: number[] } {
    const axis = this.plot?.axes[0] as (uPlot.Axis & { _values?: string[]; _splits?: number[] }) | undefined;
    return { labels: (axis?._values ?? []).map(String), values: [...(axis?._splits ?? [])] };
  }

  get width(): number {
    return Math.max(100, this.element.clientWidth || 600);
  }

  setYOptions(y: YOptions): void {
    this.y = { ...y };
    if (this.plot) this.redraw();
  }

  update(
    series: ChartSeries[],
    range: XRange | null,
    markers: ChartMarker[] = [],
    xAxis: XAxisFrame = { mode: 'step' },
  ): void {
    this.range = range;
    this.markers = markers;
    this.series = series;
    this.xAxis = xAxis;
    this.redraw();
  }

  /** The chart as a PNG data: URL, with its title, a note and the legend drawn in. */
  png(note?: string): string | undefined {
    const u = this.plot;
    if (!u) return undefined;
    return chartPng(
      u.ctx.canvas,
      this.opts.title,
      note,
      this.series.map((s, i) => ({ label: s.label, colour: this.colour(i), dashed: s.role === 'reference' })),
    );
  }

  resize(): void {
    this.plot?.setSize({ width: this.width, height: this.opts.height ?? 200 });
  }

  destroy(): void {
    this.plot?.destroy();
    this.plot = undefined;
  }

  private redraw(): void {
    const log = this.y.log;
    const tables = this.series.map((s) => [s.points.x, log ? forLogAxis(s.points.y) : s.points.y] as uPlot.AlignedData);
    this.data =
      tables.length === 0
        ? [[]]
        : tables.length === 1
          ? tables[0]
          : uPlot.join(
              tables,
              this.series.map((s) => [s.sparse ? 0 : 1]),
            );
    // Series, x mode and y options shape the plot; any change builds a new one.
    const identity = JSON.stringify([this.series.map((s) => [s.label, s.role]), this.xAxis.mode, this.y]);
    if (!this.plot || identity !== this.identity) {
      this.identity = identity;
      this.plot?.destroy();
      this.plot = this.create();
    }
    this.drawStarted = performance.now();
    this.plot.setData(this.data, true);
    if (this.range) this.plot.setScale('x', { min: this.range.min, max: this.range.max });
  }

  /** A series' colour: its own, or that of the series it smooths. */
  private colour(i: number): string {
    const s = this.series[i];
    if (s.role === 'reference') return themeColour('--vscode-descriptionForeground', '#999');
    const base = s.colourOf ? this.series.findIndex((o) => o.label === s.colourOf) : i;
    const own =
      this.series.slice(0, (base >= 0 ? base : i) + 1).filter((o) => o.role !== 'smoothed' && o.role !== 'reference')
        .length - 1;
    return themeColour(PALETTE[Math.max(0, own) % PALETTE.length]);
  }

  private create(): uPlot {
    const fg = themeColour('--vscode-foreground', '#ccc');
    const grid = themeColour('--vscode-editorWidget-border', '#444');
    const format = formatterFor(this.opts.unit);
    const font = axisFont();
    const mode = this.xAxis.mode;
    const smoothedLabels = new Set(this.series.filter((s) => s.role === 'smoothed').map((s) => s.colourOf));
    const clip = this.y.clip;
    const log = this.y.log;
    const opts: uPlot.Options = {
      width: this.width,
      height: this.opts.height ?? 200,
      scales: {
        x: { time: mode === 'time' },
        y: {
          ...(log ? { distr: 3, log: 10 } : {}),
          ...(clip ? { range: (u: uPlot, min: number, max: number) => this.clippedY(u, min, max) } : {}),
        },
      },
      legend: { live: true },
      cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: 'fsdp-steps' } },
      axes: [
        {
          stroke: fg,
          font,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid },
          ...(mode === 'step'
            ? { incrs: STEP_INCREMENTS, values: (_u: uPlot, vals: number[]) => vals.map((v) => formatStep(v)) }
            : {}),
          ...(mode === 'elapsed'
            ? { incrs: DURATION_INCREMENTS, values: (_u: uPlot, vals: number[]) => vals.map(formatElapsedTick) }
            : {}),
        },
        {
          stroke: fg,
          font,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid },
          // Neighbouring ticks never read the same: digits follow the tick step (a log axis's ticks stand alone).
          values: (_u: uPlot, vals: number[], _axis: number, _space: number, incr: number) =>
            log ? vals.map((v) => (v == null ? '' : format(v))) : tickLabels(this.opts.unit, vals, incr),
          ...(this.opts.unit === 'bytes' && !log ? { incrs: BYTE_INCREMENTS } : {}),
          // As wide as the widest label needs: ")5.4 MiB" is never cut.
          size: (_u, values) => this.axisSize(values),
        },
      ],
      series: [
        {
          label: mode === 'step' ? 'step' : mode === 'time' ? 'time' : 'elapsed',
          ...(mode === 'elapsed' ? { value: (_u: uPlot, v: number) => (v == null ? '–' : formatElapsedTick(v)) } : {}),
        },
        ...this.series.map((s, i) => {
          const faint = s.role === 'raw' && smoothedLabels.has(s.label);
          return {
            label: s.label,
            stroke: this.colour(i),
            width: s.role === 'smoothed' ? 1.75 : s.role === 'reference' ? 1.25 : faint ? 1 : 1.5,
            alpha: faint ? 0.35 : 1,
            ...(s.role === 'reference' ? { dash: [6, 4] } : {}),
            spanGaps: !!s.sparse,
            points: { show: !!s.sparse && s.role !== 'reference' },
            value: (_u: uPlot, v: number | null) => (v == null ? '–' : format(v)),
          };
        }),
      ],
      hooks: {
        setSelect: [(u) => this.zoomToSelection(u)],
        setCursor: [(u) => this.markerTooltip(u)],
        draw: [(u) => this.drawMarkers(u), () => this.opts.onDraw?.(performance.now() - this.drawStarted)],
        ready: [(u) => this.bindPanAndWheel(u)],
      },
    };
    return new uPlot(opts, this.data, this.element);
  }

  private axisSize(values: string[] | null): number {
    this.measure.font = axisFont();
    const widest = Math.max(24, ...(values ?? []).map((v) => this.measure.measureText(String(v ?? '')).width));
    return Math.ceil(widest + AXIS_EXTRA_PX);
  }

  /** The y range with outliers clipped, over what is in view. */
  private clippedY(u: uPlot, min: number, max: number): uPlot.Range.MinMax {
    const xs = u.data[0];
    const lo = u.scales.x.min ?? -Infinity;
    const hi = u.scales.x.max ?? Infinity;
    const ys = u.data
      .slice(1)
      .map((col, i) =>
        this.series[i]?.role === 'reference'
          ? []
          : Array.from(col as ArrayLike<number | null>).filter((_, k) => xs[k] >= lo && xs[k] <= hi),
      );
    const r = clippedRange(ys, this.y.log);
    if (r) return [r.min, r.max];
    return this.y.log ? [min > 0 ? min : 1e-12, max] : [min, max];
  }

  private markerTooltip(u: uPlot): void {
    const left = u.cursor.left ?? -1;
    const near = left < 0 ? undefined : this.markers.find((m) => Math.abs(u.valToPos(m.x, 'x') - left) <= 4);
    u.over.title = near ? `step ${near.step}: ${near.label}` : '';
  }

  private zoomToSelection(u: uPlot): void {
    const { left, width } = u.select;
    if (width < 5) return;
    const min = u.posToVal(left, 'x');
    const max = u.posToVal(left + width, 'x');
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    this.setRange({ min, max });
  }

  private setRange(range: XRange | null): void {
    this.range = range;
    if (range && this.plot) this.plot.setScale('x', { min: range.min, max: range.max });
    this.opts.onRange(range);
  }

  private bindPanAndWheel(u: uPlot): void {
    const over = u.over;
    over.addEventListener('dblclick', () => this.setRange(null));
    over.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        const { min, max } = this.currentRange(u);
        const at = u.posToVal(e.offsetX, 'x');
        const factor = e.deltaY < 0 ? 0.8 : 1.25;
        this.setRange({ min: at - (at - min) * factor, max: at + (max - at) * factor });
      },
      { passive: false },
    );
    over.addEventListener(
      'mousedown',
      (down) => {
        if (!down.shiftKey) return;
        down.stopPropagation(); // not a zoom selection
        const start = this.currentRange(u);
        const perPixel = (start.max - start.min) / over.clientWidth;
        const move = (e: MouseEvent) => {
          const shift = (down.clientX - e.clientX) * perPixel;
          this.setRange({ min: start.min + shift, max: start.max + shift });
        };
        const up = () => {
          window.removeEventListener('mousemove', move);
          window.removeEventListener('mouseup', up);
        };
        window.addEventListener('mousemove', move);
        window.addEventListener('mouseup', up);
      },
      { capture: true },
    );
  }

  private currentRange(u: uPlot): XRange {
    if (this.range) return this.range;
    const x = u.scales.x;
    return { min: x.min ?? 0, max: x.max ?? 1 };
  }

  private drawMarkers(u: uPlot): void {
    if (!this.markers.length) return;
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    ctx.save();
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    for (const m of this.markers) {
      const x = Math.round(u.valToPos(m.x, 'x', true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
      ctx.strokeStyle = themeColour(MARKER_COLOURS[m.kind]);
      ctx.setLineDash(m.kind === 'checkpoint' ? [4, 4] : m.kind === 'clipped' ? [2, 3] : []);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
    }
    ctx.restore();
  }
}

/** Whole steps, with thousands as k: 500, 1k, 12.5k. */
function formatStep(v: number): string {
  if (!Number.isInteger(v)) return '';
  return Math.abs(v) >= 10_000 ? `${Number((v / 1000).toPrecision(4))}k` : String(v);
}

/** Axis and legend text for a unit: 1.5 GiB, 12.3k/s, 41%. */
export function formatterFor(unit: Unit): (v: number) => string {
  switch (unit) {
    case 'bytes':
      return (v) => {
        const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
        let u = 0;
        let x = v;
        while (Math.abs(x) >= 1024 && u < units.length - 1) {
          x /= 1024;
          u++;
        }
        return `${x.toFixed(Math.abs(x) >= 100 || u === 0 ? 0 : 1)} ${units[u]}`;
      };
    case 'per_s':
      return (v) =>
        Math.abs(v) >= 1e6
          ? `${(v / 1e6).toFixed(2)}M`
          : Math.abs(v) >= 1e3
            ? `${(v / 1e3).toFixed(1)}k`
            : String(Number(v.toPrecision(3)));
    case 'ratio':
      return (v) => `${Number((v * 100).toPrecision(3))}%`;
    default:
      return (v) =>
        v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)
          ? v.toExponential(2).replace(/\.?0+e/, 'e')
          : String(Number(v.toPrecision(4)));
  }
}
