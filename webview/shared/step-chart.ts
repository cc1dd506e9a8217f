// One uPlot chart over optimizer steps, themed with VS Code's colours, with the interactions both
// the dashboard and the compare view use: drag to zoom, wheel to zoom at the cursor, shift-drag to
// pan, double-click to follow the whole run again. The chart never computes the points itself:
// it reports the range it wants and the extension host sends them, downsampled to its width.
import uPlot from 'uplot';
import type { ChartFrame, ChartSeries } from '../../core/panels/dashboard-messages';
import type { XRange } from '../../core/runs/downsample';
import type { RunMarker } from '../../core/runs/run-history';

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

const PALETTE = ['--vscode-charts-blue', '--vscode-charts-orange', '--vscode-charts-green', '--vscode-charts-purple', '--vscode-charts-red', '--vscode-charts-yellow'];
const MARKER_COLOURS: Record<RunMarker['kind'], string> = {
  checkpoint: '--vscode-charts-blue',
  skipped: '--vscode-charts-orange',
  spike: '--vscode-charts-yellow',
  nan: '--vscode-charts-red',
  inf: '--vscode-charts-red',
};

export function themeColour(variable: string, fallback = '#888'): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

export class StepChart {
  readonly element: HTMLElement;
  private plot: uPlot | undefined;
  private labels: string[] = [];
  private range: XRange | null = null;
  private markers: RunMarker[] = [];
  private data: uPlot.AlignedData = [[]];
  private drawStarted = 0;

  constructor(private readonly opts: StepChartOptions) {
    this.element = document.createElement('div');
    this.element.className = 'step-chart';
  }

  /** The points drawn now: x and one array per series (what a reader of the chart sees). */
  points(): { x: number[]; series: Array<{ label: string; y: Array<number | null | undefined> }> } {
    const [x, ...ys] = this.data as unknown as [number[], ...Array<Array<number | null | undefined>>];
    return { x: [...x], series: ys.map((y, i) => ({ label: this.labels[i], y: [...y] })) };
  }

  get width(): number {
    return Math.max(100, this.element.clientWidth || 600);
  }

  update(series: ChartSeries[], range: XRange | null, markers: RunMarker[] = []): void {
    this.range = range;
    this.markers = markers;
    const tables = series.map((s) => [s.points.x, s.points.y] as uPlot.AlignedData);
    this.data = tables.length === 0 ? [[]] : tables.length === 1 ? tables[0] : uPlot.join(tables, series.map((s) => [s.sparse ? 0 : 1]));
    const labels = series.map((s) => s.label);
    if (!this.plot || labels.join('\n') !== this.labels.join('\n')) {
      this.labels = labels;
      this.plot?.destroy();
      this.plot = this.create(series);
    }
    this.drawStarted = performance.now();
    this.plot.setData(this.data, true);
    if (range) this.plot.setScale('x', { min: range.min, max: range.max });
  }

  resize(): void {
    this.plot?.setSize({ width: this.width, height: this.opts.height ?? 200 });
  }

  destroy(): void {
    this.plot?.destroy();
    this.plot = undefined;
  }

  private create(series: ChartSeries[]): uPlot {
    const fg = themeColour('--vscode-foreground', '#ccc');
    const grid = themeColour('--vscode-editorWidget-border', '#444');
    const format = formatterFor(this.opts.unit);
    const opts: uPlot.Options = {
      width: this.width,
      height: this.opts.height ?? 200,
      title: this.opts.title,
      scales: { x: { time: false } },
      legend: { live: true },
      cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: 'fsdp-steps' } },
      axes: [
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 64, values: (_u, vals) => vals.map(format) },
      ],
      series: [
        { label: 'step' },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: themeColour(PALETTE[i % PALETTE.length]),
          width: i === 0 && series.length > 1 && s.label === 'loss' ? 1 : 1.5,
          alpha: i === 0 && series.length > 1 && s.label === 'loss' ? 0.45 : 1,
          spanGaps: !!s.sparse,
          points: { show: !!s.sparse },
          value: (_u: uPlot, v: number | null) => (v == null ? '–' : format(v)),
        })),
      ],
      hooks: {
        setSelect: [(u) => this.zoomToSelection(u)],
        draw: [(u) => this.drawMarkers(u), () => this.opts.onDraw?.(performance.now() - this.drawStarted)],
        ready: [(u) => this.bindPanAndWheel(u)],
      },
    };
    return new uPlot(opts, this.data, this.element);
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
    over.addEventListener('mousedown', (down) => {
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
    }, { capture: true });
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
      const x = Math.round(u.valToPos(m.step, 'x', true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
      ctx.strokeStyle = themeColour(MARKER_COLOURS[m.kind]);
      ctx.setLineDash(m.kind === 'checkpoint' ? [4, 4] : []);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
    }
    ctx.restore();
  }
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
        return `${x.toFixed(x >= 100 ? 0 : 1)} ${units[u]}`;
      };
    case 'per_s':
      return (v) => (Math.abs(v) >= 1e6 ? `${(v / 1e6).toFixed(2)}M` : Math.abs(v) >= 1e3 ? `${(v / 1e3).toFixed(1)}k` : v.toFixed(0));
    case 'ratio':
      return (v) => `${(v * 100).toFixed(1)}%`;
    default:
      return (v) => (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5) ? v.toExponential(2) : String(Number(v.toPrecision(4))));
  }
}
