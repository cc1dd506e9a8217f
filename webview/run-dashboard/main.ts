// The run dashboard, webview side: a header (status, step, elapsed, tokens, ETA, what is under
// way, config, actions), a Charts tab with one card per metric and a Log tab with the run's output.
// A pure view of the frames the extension host sends; it keeps only its run, zoom, x axis,
// smoothing, per-chart options and tab in getState/setState, so a reload or a hidden-then-shown
// panel comes back the same.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-progress-ring/index.js';
import type {
  ChartId,
  ChartOptions,
  DashboardAction,
  DashboardFrameMessage,
  DashboardFromWebview,
  DashboardState,
  DashboardToWebview,
} from '../../core/panels/dashboard-messages';
import type { XRange } from '../../core/runs/downsample';
import { isXAxisMode, type XAxisMode } from '../../core/runs/x-axis';
import { ChartCard } from '../shared/chart-card';
import { connectToHost } from '../shared/vscode-api';
import { header, HEADER_HTML, renderHeader, tick } from './header';
import { appendLog, describeLogs, LOG_TAB_HTML, logText } from './log-tab';
import { ScalarTagsSection } from './scalar-tags';
import './style.css';

const host = connectToHost<DashboardFromWebview, DashboardToWebview, DashboardState>();
const saved = host.getState();
let range: XRange | null = saved?.range ?? null;
let smoothing = saved?.smoothing ?? 0.6;
let xAxis: XAxisMode = isXAxisMode(saved?.xAxis) ? saved.xAxis : 'step';
const chartOptions: Record<string, ChartOptions> = { ...(saved?.charts ?? {}) };
let tab: 'charts' | 'log' = saved?.tab ?? 'charts';
let last: DashboardFrameMessage | undefined;
const cards = new Map<ChartId, ChartCard>();

/** Timings of the frames drawn, for the benchmarks (bench/watch) and for anyone curious. */
interface FrameTiming {
  seq: number;
  lastStep: number | null;
  /** ms since the epoch when the frame arrived and when the loss chart finished drawing it. */
  receivedAt: number;
  drawnAt: number;
  drawMs: number;
}
const timings: FrameTiming[] = [];
let receivedAt = 0;

const app = document.getElementById('app')!;
app.innerHTML = `${HEADER_HTML}
  <div class="tabs" role="tablist">
    <button id="tab-charts" class="tab" role="tab" data-tab="charts">Charts</button>
    <button id="tab-log" class="tab" role="tab" data-tab="log">Log</button>
  </div>
  <div id="panel-charts" role="tabpanel">
    <div class="toolbar">
      <label for="x-axis">x axis</label>
      <select id="x-axis">
        <option value="step">step</option>
        <option value="time">wall-clock time</option>
        <option value="elapsed">elapsed time</option>
      </select>
      <label for="smoothing">Smoothing (EMA)</label>
      <input id="smoothing" type="range" min="0" max="0.99" step="0.01">
      <span id="smoothing-value"></span>
      <vscode-button id="zoom-reset" icon="zoom-out" secondary>Whole run</vscode-button>
      <span class="muted hint">drag: zoom · wheel: zoom · shift-drag: pan · double-click: whole run</span>
      <span id="points" class="muted"></span>
    </div>
    <div id="charts" class="charts"></div>
    <div class="legend-markers muted">
      <span class="m checkpoint">checkpoint</span><span class="m skipped">skipped step</span><span class="m spike">loss spike</span><span class="m clipped">grad norm clipped</span><span class="m nan">NaN/Inf</span>
    </div>
  </div>
  <div id="panel-log" role="tabpanel">${LOG_TAB_HTML}</div>`;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
let closedTagGroups = saved?.closedTagGroups ?? [];
const scalarTags = new ScalarTagsSection({
  closed: closedTagGroups,
  onClosedChange: (closed) => {
    closedTagGroups = closed;
    saveState();
    host.send({ type: 'tagGroups', closed });
  },
  onRange: (r) => changeRange(r),
});
$('charts').after(scalarTags.element);
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
  // A range in steps means nothing in seconds: the new axis starts on the whole run.
  range = null;
  saveState();
  sendView();
});
$('zoom-reset').addEventListener('click', () => changeRange(null));
$('export-csv').addEventListener('click', () => host.send({ type: 'exportCsv' }));
for (const button of app.querySelectorAll<HTMLElement>('[data-action]')) {
  button.addEventListener('click', () =>
    host.send({ type: 'action', action: button.dataset.action as DashboardAction }),
  );
}
for (const button of app.querySelectorAll<HTMLElement>('[data-tab]'))
  button.addEventListener('click', () => showTab(button.dataset.tab as 'charts' | 'log'));

function showTab(t: 'charts' | 'log'): void {
  tab = t;
  for (const name of ['charts', 'log'] as const) {
    $(`panel-${name}`).hidden = name !== t;
    $(`tab-${name}`).setAttribute('aria-selected', String(name === t));
  }
  saveState();
  // The host reads the run's output only while someone looks at it.
  host.send({ type: 'logs', follow: t === 'log' });
  if (t === 'charts') for (const c of cards.values()) c.chart.resize();
}

let viewTimer: number | undefined;
function changeRange(r: XRange | null): void {
  range = r;
  saveState();
  // Wheel and pan fire many times a second; the host is asked once things settle.
  clearTimeout(viewTimer);
  viewTimer = window.setTimeout(sendView, 40);
}

function sendView(): void {
  host.send({ type: 'view', range, width: chartWidth(), xAxis });
}

function chartWidth(): number {
  const first = cards.values().next().value as ChartCard | undefined;
  return first?.chart.width ?? Math.max(300, $('charts').clientWidth - 40);
}

function saveState(): void {
  if (last)
    host.setState({
      target: last.run.target,
      runDir: last.run.runDir,
      smoothing,
      range,
      xAxis,
      charts: chartOptions,
      tab,
      closedTagGroups,
    });
}

function onFrame(frame: DashboardFrameMessage): void {
  receivedAt = Date.now();
  last = frame;
  saveState();
  renderHeader(frame.header);
  describeLogs(frame.header.runKind);
  // The connection line says "live" only while the run is: a frame saying it ended clears it now.
  renderConnection();
  $('points').textContent = `${frame.totalPoints.toLocaleString()} steps`;
  const container = $('charts');
  for (const c of frame.charts) {
    let card = cards.get(c.id);
    if (!card) {
      card = new ChartCard({
        id: c.id,
        title: c.title,
        unit: c.unit,
        y: { log: !!chartOptions[c.id]?.log, clip: !!chartOptions[c.id]?.clip },
        onRange: changeRange,
        onYOptions: (y) => {
          chartOptions[c.id] = y;
          saveState();
        },
        onPng: (dataUrl) => host.send({ type: 'exportPng', chart: c.id, title: c.title, dataUrl }),
        ...(c.id === 'loss' ? { onDraw: (ms: number) => recordTiming(ms) } : {}),
      });
      cards.set(c.id, card);
      container.appendChild(card.element);
    }
    // Ranges arrive in the frame's own x units; a frame for another axis (in flight while it changed) keeps the whole run.
    card.update(c, frame.xAxis.mode === xAxis ? range : null, frame.xAxis);
  }
  // The tags' charts are over steps: they follow the zoom while the x axis is the step.
  scalarTags.update(frame.tags, frame.xAxis.mode === 'step' && xAxis === 'step' ? range : null);
}

/** Resolved by the next draw of the loss chart: how long a zoom took from request to pixels. */
let drawWaiters: Array<(t: FrameTiming) => void> = [];

function recordTiming(drawMs: number): void {
  if (!last) return;
  const t = { seq: last.seq, lastStep: last.header.step ?? null, receivedAt, drawnAt: Date.now(), drawMs };
  timings.push(t);
  if (timings.length > 5000) timings.splice(0, timings.length - 5000);
  const waiters = drawWaiters;
  drawWaiters = [];
  for (const w of waiters) w(t);
}

/** Zooms as a person would and resolves when the host's answer is drawn (benchmarks use it). */
function zoomAndMeasure(r: XRange | null): Promise<{ roundTripMs: number; drawMs: number; points: number }> {
  const requestedAt = Date.now();
  const seq = last?.seq ?? 0;
  return new Promise((resolve) => {
    const wait = (t: FrameTiming) => {
      if (t.seq <= seq) drawWaiters.push(wait);
      else
        resolve({
          roundTripMs: t.drawnAt - requestedAt,
          drawMs: t.drawMs,
          points: cards.get('loss')?.chart.points().x.length ?? 0,
        });
    };
    drawWaiters.push(wait);
    range = r;
    saveState();
    sendView();
  });
}

/** The connection line counts down to the next attempt by itself, between frames. */
function renderConnection(): void {
  const c = last?.header.connection;
  const el = $('connection');
  el.dataset.state = c?.state ?? 'closed';
  if (!c) el.textContent = '';
  else if (c.state === 'reconnecting') {
    const s = Math.max(0, Math.ceil((c.retryAt - Date.now()) / 1000));
    el.textContent = `connection lost (${c.reason}); reconnecting in ${s} s, attempt ${c.attempt}`;
  } else {
    // "live" is about the run: an ended run's file may still be watched, but nothing is live.
    const running = last?.header.status === 'running' || last?.header.status === 'starting';
    el.textContent = c.state === 'live' && running ? 'live' : c.state === 'connecting' ? 'connecting…' : '';
    if (!running && c.state === 'live') el.dataset.state = 'closed';
  }
}
setInterval(() => {
  renderConnection();
  tick();
}, 1000);

new ResizeObserver(() => {
  for (const c of cards.values()) c.chart.resize();
  scalarTags.resize();
  changeRange(range);
}).observe($('charts'));

// For tests and benchmarks: what the charts draw, and when.
Object.assign(window, {
  fsdpDashboard: {
    points: (id: ChartId) => cards.get(id)?.chart.points(),
    yAxis: (id: ChartId) => cards.get(id)?.chart.yAxis(),
    xTicks: (id: ChartId) => cards.get(id)?.chart.xTicks(),
    png: (id: ChartId) => cards.get(id)?.chart.png(),
    charts: () =>
      last?.charts.map((c) => ({
        id: c.id,
        title: c.title,
        note: c.note,
        tooltip: c.tooltip,
        empty: c.empty,
        series: c.series.map((s) => ({ label: s.label, role: s.role })),
        markers: c.markers ?? [],
      })),
    xAxis: () => last?.xAxis,
    timings: () => timings.slice(),
    header,
    log: logText,
    zoom: zoomAndMeasure,
    tags: () => scalarTags.snapshot(),
  },
});

host.listen((m) => {
  if (m.type === 'frame') onFrame(m);
  else if (m.type === 'log') appendLog(m.stream, m.text, !!m.reset, m.note);
});
showTab(tab);
// Tell the host the size (and restored zoom) before the first frame, so it is built for it.
sendView();
