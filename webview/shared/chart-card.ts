// A chart in a card: its title (with what it is measured against as a note and a tooltip), the
// per-chart tools — log y axis, clip outliers, save as PNG — and the chart itself.
import type { ChartFrame, ChartMarker, ChartSeries, XAxisFrame } from '../../core/panels/chart-messages';
import type { XRange } from '../../core/runs/downsample';
import { StepChart, type YOptions } from './step-chart';

export interface ChartCardOptions {
  id: string;
  title: string;
  unit: ChartFrame['unit'];
  height?: number;
  y: YOptions;
  onRange(range: XRange | null): void;
  /** The person changed log or clip: to keep in the webview's state. */
  onYOptions(y: YOptions): void;
  /** The person asked for a PNG: the chart as a data: URL. */
  onPng(dataUrl: string): void;
  onDraw?(ms: number): void;
}

export class ChartCard {
  readonly element: HTMLElement;
  readonly chart: StepChart;
  private readonly heading: HTMLElement;
  private readonly noteEl: HTMLElement;
  private readonly emptyEl: HTMLElement;
  private note: string | undefined;
  private y: YOptions;

  constructor(private readonly opts: ChartCardOptions) {
    this.y = { ...opts.y };
    this.chart = new StepChart({
      title: opts.title,
      unit: opts.unit,
      ...(opts.height ? { height: opts.height } : {}),
      onRange: opts.onRange,
      ...(opts.onDraw ? { onDraw: opts.onDraw } : {}),
    });
    this.chart.setYOptions(this.y);
    this.element = document.createElement('section');
    this.element.className = `chart-card chart-${opts.id}`;
    this.element.dataset.chart = opts.id;
    const head = document.createElement('div');
    head.className = 'card-head';
    this.heading = document.createElement('h2');
    this.heading.textContent = opts.title;
    this.noteEl = document.createElement('span');
    this.noteEl.className = 'note muted';
    const tools = document.createElement('span');
    tools.className = 'card-tools';
    tools.append(
      this.toggle('log', 'log scale', 'Logarithmic y axis'),
      this.toggle(
        'clip',
        'clip outliers',
        'Leave the extreme points out of the y range, so one spike does not flatten the curve',
      ),
      this.button('png', 'PNG', 'Save this chart as a PNG image', () => {
        const url = this.chart.png(this.note);
        if (url) opts.onPng(url);
      }),
    );
    head.append(this.heading, this.noteEl, tools);
    this.emptyEl = document.createElement('p');
    this.emptyEl.className = 'chart-empty muted';
    this.emptyEl.hidden = true;
    this.element.append(head, this.emptyEl, this.chart.element);
  }

  update(
    frame: { series: ChartSeries[]; note?: string; tooltip?: string; markers?: ChartMarker[]; empty?: string },
    range: XRange | null,
    xAxis: XAxisFrame,
  ): void {
    this.note = frame.note;
    // An empty chart says why in words, in place of a blank plot.
    this.emptyEl.textContent = frame.empty ?? '';
    this.emptyEl.hidden = !frame.empty;
    this.noteEl.textContent = frame.note ?? '';
    const tip = [frame.note, frame.tooltip].filter(Boolean).join('\n');
    this.heading.title = tip;
    this.noteEl.title = tip;
    this.chart.update(frame.series, range, frame.markers ?? [], xAxis);
  }

  private toggle(key: keyof YOptions, text: string, tip: string): HTMLButtonElement {
    const b = this.button(key, text, tip, () => {
      this.y = { ...this.y, [key]: !this.y[key] };
      b.setAttribute('aria-pressed', String(this.y[key]));
      this.chart.setYOptions(this.y);
      this.opts.onYOptions(this.y);
    });
    b.setAttribute('aria-pressed', String(this.y[key]));
    return b;
  }

  private button(tool: string, text: string, tip: string, onClick: () => void): HTMLButtonElement {
    const b = document.createElement('button');
    b.className = 'tool';
    b.dataset.tool = tool;
    b.textContent = text;
    b.title = tip;
    b.addEventListener('click', onClick);
    return b;
  }
}
