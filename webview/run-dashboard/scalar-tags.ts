// The dashboard's "all scalars" section: every scalar tag of the run, grouped by prefix like
// TensorBoard, each group a <details> the person opens and closes (remembered with the panel's
// state); a tag the dashboard draws in one of its own charts names that chart, the others have a
// chart of their own over the same steps, zoomed and panned with the rest.
import type { ScalarTagFrame, ScalarTagsFrame } from '../../core/panels/scalar-tags-messages';
import type { XRange } from '../../core/runs/downsample';
import { StepChart } from '../shared/step-chart';

export interface ScalarTagsOptions {
  /** Groups closed by the person (restored state). */
  closed: string[];
  onClosedChange(closed: string[]): void;
  onRange(range: XRange | null): void;
}

export class ScalarTagsSection {
  readonly element: HTMLElement;
  private readonly heading: HTMLElement;
  private readonly body: HTMLElement;
  private readonly groups = new Map<
    string,
    { details: HTMLDetailsElement; summary: HTMLElement; list: HTMLElement; grid: HTMLElement }
  >();
  private readonly charts = new Map<string, { card: HTMLElement; chart: StepChart }>();
  private readonly closed: Set<string>;
  private last: ScalarTagsFrame | undefined;

  constructor(private readonly opts: ScalarTagsOptions) {
    this.closed = new Set(opts.closed);
    this.element = document.createElement('section');
    this.element.className = 'scalar-tags';
    this.element.hidden = true;
    this.heading = document.createElement('h2');
    this.body = document.createElement('div');
    this.element.append(this.heading, this.body);
  }

  update(frame: ScalarTagsFrame | undefined, range: XRange | null): void {
    this.last = frame;
    const count = frame?.groups.reduce((n, g) => n + g.tags.length, 0) ?? 0;
    this.element.hidden = count === 0;
    if (!frame || count === 0) return;
    this.heading.textContent = `All scalars (${count} tag${count === 1 ? '' : 's'})${frame.omitted ? ` — ${frame.omitted} chart${frame.omitted === 1 ? '' : 's'} not drawn: close some groups` : ''}`;
    const seen = new Set<string>();
    for (const g of frame.groups) {
      const view = this.group(g.group);
      const drawn = g.tags.filter((t) => t.drawnIn);
      view.summary.textContent = `${g.group || '(no prefix)'} · ${g.tags.length} tag${g.tags.length === 1 ? '' : 's'}`;
      view.list.textContent = drawn
        .map((t) => `${t.tag} → ${t.drawnIn} chart (${formatValue(t.lastValue)} at step ${t.lastStep})`)
        .join(' · ');
      view.list.hidden = drawn.length === 0;
      for (const t of g.tags) {
        if (!t.points) continue;
        seen.add(t.tag);
        this.chart(t, view.grid).chart.update([{ label: t.tag, points: t.points }], range);
      }
    }
    // Charts of closed groups (or tags no longer sent) go; they come back when opened.
    for (const [tag, c] of this.charts) {
      if (seen.has(tag)) continue;
      c.chart.destroy();
      c.card.remove();
      this.charts.delete(tag);
    }
  }

  resize(): void {
    for (const c of this.charts.values()) c.chart.resize();
  }

  /** For tests: the tags shown, by group, and the points of each tag chart. */
  snapshot(): {
    groups: Array<{ group: string; open: boolean; tags: string[]; drawnIn: Record<string, string> }>;
    points: Record<string, { x: number[] }>;
  } {
    const groups = (this.last?.groups ?? []).map((g) => ({
      group: g.group,
      open: !this.closed.has(g.group),
      tags: g.tags.map((t) => t.tag),
      drawnIn: Object.fromEntries(g.tags.filter((t) => t.drawnIn).map((t) => [t.tag, t.drawnIn!])),
    }));
    const points = Object.fromEntries([...this.charts].map(([tag, c]) => [tag, { x: c.chart.points().x }]));
    return { groups, points };
  }

  private group(name: string) {
    let g = this.groups.get(name);
    if (g) return g;
    const details = document.createElement('details');
    details.className = 'tag-group';
    details.dataset.group = name;
    details.open = !this.closed.has(name);
    const summary = document.createElement('summary');
    const list = document.createElement('div');
    list.className = 'muted drawn-tags';
    const grid = document.createElement('div');
    grid.className = 'charts';
    details.append(summary, list, grid);
    details.addEventListener('toggle', () => {
      if (details.open) this.closed.delete(name);
      else this.closed.add(name);
      this.opts.onClosedChange([...this.closed]);
    });
    this.body.appendChild(details);
    g = { details, summary, list, grid };
    this.groups.set(name, g);
    return g;
  }

  private chart(t: ScalarTagFrame, grid: HTMLElement) {
    let c = this.charts.get(t.tag);
    if (c) return c;
    const card = document.createElement('section');
    card.className = 'chart-card';
    card.dataset.tag = t.tag;
    const chart = new StepChart({ title: t.tag, unit: 'number', height: 160, onRange: (r) => this.opts.onRange(r) });
    card.appendChild(chart.element);
    grid.appendChild(card);
    c = { card, chart };
    this.charts.set(t.tag, c);
    return c;
  }
}

function formatValue(v: number | null): string {
  if (v === null) return 'not finite';
  return v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5) ? v.toExponential(3) : String(Number(v.toPrecision(5)));
}
