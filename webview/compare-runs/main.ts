// Compare runs, webview side: the runs with their status, a table of the config values that
// differ, and one chart per metric with a line per run; zoom, x axis, smoothing and per-chart tools
// like the dashboard. Keeps the picked runs in its state so a reload restores the comparison.
import type {
  CompareFrameMessage,
  CompareFromWebview,
  CompareState,
  CompareToWebview,
} from '../../core/panels/compare-messages';
import type { ChartOptions } from '../../core/panels/dashboard-messages';
import type { XRange } from '../../core/runs/downsample';
import { isXAxisMode, type XAxisMode } from '../../core/runs/x-axis';
import { ChartCard } from '../shared/chart-card';
import { PALETTE } from '../shared/step-chart';
import { connectToHost } from '../shared/vscode-api';
import '../run-dashboard/style.css';
import './style.css';

const host = connectToHost<CompareFromWebview, CompareToWebview, CompareState>();
const saved = host.getState();
let range: XRange | null = null;
let smoothing = saved?.smoothing ?? 0.6;
let xAxis: XAxisMode = isXAxisMode(saved?.xAxis) ? saved.xAxis : 'step';
const chartOptions: Record<string, ChartOptions> = { ...(saved?.charts ?? {}) };
let last: CompareFrameMessage | undefined;
const cards = new Map<string, ChartCard>();

const app = document.getElementById('app')!;
app.innerHTML = `
  <header class="run-header">
    <div class="title-row"><h1>Compare runs</h1></div>
    <ul id="runs" class="runs-list"></ul>
    <details id="config-diff-section" open>
      <summary>Config differences <span id="config-diff-count" class="muted"></span></summary>
      <div class="table-wrap"><table id="config-diff" class="config-diff"></table></div>
    </details>
  </header>
  <div class="toolbar">
    <label for="x-axis">x axis</label>
    <select id="x-axis">
      <option value="step">step</option>
      <option value="elapsed">elapsed time</option>
      <option value="time">wall-clock time</option>
    </select>
    <label for="smoothing">Smoothing (EMA)</label>
    <input id="smoothing" type="range" min="0" max="0.99" step="0.01">
    <span id="smoothing-value"></span>
    <span class="muted hint">drag: zoom · wheel: zoom · shift-drag: pan · double-click: whole runs</span>
  </div>
  <div id="charts" class="charts"></div>`;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const slider = $<HTMLInputElement>('smoothing');
slider.value = String(smoothing);
$('smoothing-value').textContent = smoothing.toFixed(2);
slider.addEventListener('input', () => {
  smoothing = Number(slider.value);
  $('smoothing-value').textContent = smoothing.toFixed(2);
  saveState();
  host.send({ type: 'smoothing', weight: smoothing });
});
const axisSelect = $<HTMLSelectElement>('x-axis');
axisSelect.value = xAxis;
axisSelect.addEventListener('change', () => {
  if (!isXAxisMode(axisSelect.value)) return;
  xAxis = axisSelect.value;
  range = null;
  saveState();
  sendView();
});

function saveState(): void {
  if (last)
    host.setState({
      runs: last.runs.map((r) => ({ target: r.target, runDir: r.runDir })),
      smoothing,
      xAxis,
      charts: chartOptions,
    });
}

function sendView(): void {
  const first = cards.values().next().value as ChartCard | undefined;
  host.send({ type: 'view', range, width: first?.chart.width ?? Math.max(300, $('charts').clientWidth - 40), xAxis });
}

function onRange(r: XRange | null): void {
  range = r;
  sendView();
}

function render(m: CompareFrameMessage): void {
  last = m;
  saveState();
  const list = $('runs');
  list.replaceChildren(
    ...m.runs.map((r, i) => {
      const li = document.createElement('li');
      // The run's colour on every chart (the charts give the i-th series the i-th palette colour).
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = `var(${PALETTE[i % PALETTE.length]})`;
      li.append(
        swatch,
        `${r.label} — ${r.status}${r.step !== undefined ? ` · step ${r.step}` : ''}${r.loss !== undefined ? ` · loss ${r.loss === null ? 'NaN' : r.loss.toFixed(4)}` : ''}`,
      );
      return li;
    }),
  );
  renderConfigDiff(m);
  for (const c of m.charts) {
    let card = cards.get(c.id);
    if (!card) {
      card = new ChartCard({
        id: c.id,
        title: c.title,
        unit: c.unit,
        ...(c.id === 'loss' ? { height: 320 } : {}),
        y: { log: !!chartOptions[c.id]?.log, clip: !!chartOptions[c.id]?.clip },
        onRange,
        onYOptions: (y) => {
          chartOptions[c.id] = y;
          saveState();
        },
        onPng: (dataUrl) => host.send({ type: 'exportPng', chart: c.id, title: c.title, dataUrl }),
      });
      cards.set(c.id, card);
      $('charts').appendChild(card.element);
    }
    card.update(c, m.xAxis.mode === xAxis ? range : null, m.xAxis);
  }
}

function renderConfigDiff(m: CompareFrameMessage): void {
  const table = $('config-diff');
  $('config-diff-count').textContent = m.configDiff.length
    ? `(${m.configDiff.length})`
    : '(none: the configs are the same)';
  // No differences: no table at all (a header over no rows said nothing).
  table.hidden = m.configDiff.length === 0;
  if (table.hidden) {
    table.replaceChildren();
    return;
  }
  const head = document.createElement('tr');
  const th = (text: string) => {
    const e = document.createElement('th');
    e.textContent = text;
    return e;
  };
  head.append(th('key'), ...m.runs.map((r) => th(r.label)));
  const rows = m.configDiff.map((d) => {
    const tr = document.createElement('tr');
    const key = document.createElement('td');
    key.textContent = d.key;
    key.className = 'key';
    tr.append(
      key,
      ...d.values.map((v) => {
        const td = document.createElement('td');
        td.textContent = v ?? '—';
        if (v === undefined) td.className = 'muted';
        return td;
      }),
    );
    return tr;
  });
  table.replaceChildren(head, ...rows);
}

new ResizeObserver(() => {
  for (const c of cards.values()) c.chart.resize();
  sendView();
}).observe($('charts'));

// For tests: what the charts draw and which runs are compared.
Object.assign(window, {
  fsdpCompare: {
    points: (id = 'loss') => cards.get(id)?.chart.points(),
    charts: () => last?.charts.map((c) => ({ id: c.id, title: c.title, series: c.series.map((s) => s.label) })),
    configDiff: () => last?.configDiff,
    configTable: () => {
      const t = $('config-diff');
      return {
        hidden: t.hidden,
        headers: [...t.querySelectorAll('th')].map((e) => e.textContent),
        rows: t.querySelectorAll('td.key').length,
      };
    },
    runs: () => last?.runs,
  },
});

host.listen((m) => {
  if (m.type === 'compare') render(m);
});
