// The run dashboard, webview side: a header (status, step, ETA, config, actions) and one chart per
// metric. A pure view of the frames the extension host sends; it keeps only its run, zoom and
// smoothing in getState/setState, so a reload or a hidden-then-shown panel comes back the same.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import type { ChartId, DashboardAction, DashboardFrameMessage, DashboardFromWebview, DashboardHeader, DashboardState, DashboardToWebview } from '../../core/panels/dashboard-messages';
import type { XRange } from '../../core/runs/downsample';
import { connectToHost } from '../shared/vscode-api';
import { StepChart } from '../shared/step-chart';
import './style.css';

const host = connectToHost<DashboardFromWebview, DashboardToWebview, DashboardState>();
const saved = host.getState();
let range: XRange | null = saved?.range ?? null;
let smoothing = saved?.smoothing ?? 0.6;
let last: DashboardFrameMessage | undefined;
const charts = new Map<ChartId, StepChart>();

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
app.innerHTML = `
  <header class="run-header">
    <div class="title-row">
      <h1 id="run-name">Run</h1>
      <vscode-badge id="run-status">…</vscode-badge>
      <span id="run-target" class="muted"></span>
      <span id="connection" class="connection"></span>
    </div>
    <div class="progress-row">
      <span id="run-step"></span><span id="run-loss"></span><span id="run-eta"></span><span id="run-problems" class="warning"></span>
    </div>
    <div id="run-reason" class="error"></div>
    <dl id="run-summary" class="summary"></dl>
    <div class="actions">
      <vscode-button id="action-stop" data-action="stop" icon="debug-stop">Stop</vscode-button>
      <vscode-button id="action-resume" data-action="resume" icon="debug-continue">Resume</vscode-button>
      <vscode-button id="action-diagnostics" data-action="diagnostics" icon="bug" secondary>NaN diagnostics</vscode-button>
      <vscode-button data-action="openConfig" icon="go-to-file" secondary>Open config</vscode-button>
      <vscode-button data-action="openFolder" icon="folder-opened" secondary>Open run folder</vscode-button>
    </div>
  </header>
  <div class="toolbar">
    <label for="smoothing">Smoothing (EMA)</label>
    <input id="smoothing" type="range" min="0" max="0.99" step="0.01">
    <span id="smoothing-value"></span>
    <vscode-button id="zoom-reset" icon="zoom-out" secondary>Whole run</vscode-button>
    <span class="muted hint">drag: zoom · wheel: zoom · shift-drag: pan · double-click: whole run</span>
    <span id="points" class="muted"></span>
  </div>
  <div id="charts" class="charts"></div>
  <div class="legend-markers muted">
    <span class="m checkpoint">checkpoint</span><span class="m skipped">skipped step</span><span class="m spike">spike</span><span class="m nan">NaN/Inf</span>
  </div>`;

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
$('zoom-reset').addEventListener('click', () => changeRange(null));
for (const button of app.querySelectorAll<HTMLElement>('[data-action]')) {
  button.addEventListener('click', () => host.send({ type: 'action', action: button.dataset.action as DashboardAction }));
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
  host.send({ type: 'view', range, width: chartWidth() });
}

function chartWidth(): number {
  const first = charts.values().next().value as StepChart | undefined;
  return first?.width ?? Math.max(300, $('charts').clientWidth - 40);
}

function saveState(): void {
  if (last) host.setState({ target: last.run.target, runDir: last.run.runDir, smoothing, range });
}

function onFrame(frame: DashboardFrameMessage): void {
  receivedAt = Date.now();
  last = frame;
  saveState();
  renderHeader(frame.header);
  $('points').textContent = `${frame.totalPoints.toLocaleString()} steps`;
  const container = $('charts');
  for (const c of frame.charts) {
    let chart = charts.get(c.id);
    if (!chart) {
      chart = new StepChart({
        title: c.title,
        unit: c.unit,
        onRange: changeRange,
        ...(c.id === 'loss' ? { onDraw: (ms: number) => recordTiming(ms) } : {}),
      });
      charts.set(c.id, chart);
      const card = document.createElement('section');
      card.className = `chart-card chart-${c.id}`;
      card.dataset.chart = c.id;
      card.appendChild(chart.element);
      container.appendChild(card);
    }
    // Markers (checkpoints, skipped steps, spikes, NaN) on the loss chart, where they are read.
    chart.update(c.series, range, c.id === 'loss' ? frame.markers : []);
  }
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
      else resolve({ roundTripMs: t.drawnAt - requestedAt, drawMs: t.drawMs, points: charts.get('loss')?.points().x.length ?? 0 });
    };
    drawWaiters.push(wait);
    range = r;
    saveState();
    sendView();
  });
}

function renderHeader(h: DashboardHeader): void {
  $('run-name').textContent = h.name;
  const status = $('run-status');
  status.textContent = h.status;
  status.dataset.status = h.status;
  $('run-target').textContent = h.target === 'local' ? 'this machine' : `on ${h.target}`;
  $('run-step').textContent = h.step !== undefined ? `step ${h.step}${h.maxSteps ? ` / ${h.maxSteps}` : ''}` : 'no steps yet';
  $('run-loss').textContent = h.loss !== undefined ? `loss ${h.loss === null ? 'NaN' : h.loss.toFixed(4)}` : '';
  $('run-eta').textContent = h.etaSeconds !== undefined ? `ETA ${formatDuration(h.etaSeconds)}` : '';
  $('run-problems').textContent = h.problems ? `${h.problems} unreadable log line${h.problems > 1 ? 's' : ''}` : '';
  $('run-reason').textContent = h.reason ?? '';
  // A stop the person asked for is not an error.
  $('run-reason').className = h.status === 'failed' ? 'error' : '';
  $('run-summary').innerHTML = '';
  for (const [k, v] of h.summary) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    $('run-summary').append(dt, dd);
  }
  $('action-stop').hidden = !h.canStop;
  $('action-resume').hidden = !h.canResume;
  $('action-diagnostics').hidden = h.anomalies === 0;
  renderConnection();
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
  } else el.textContent = c.state === 'live' ? 'live' : c.state === 'connecting' ? 'connecting…' : '';
}
setInterval(renderConnection, 1000);

function formatDuration(s: number): string {
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

new ResizeObserver(() => {
  for (const c of charts.values()) c.resize();
  changeRange(range);
}).observe($('charts'));

// For tests and benchmarks: what the charts draw, and when.
Object.assign(window, {
  fsdpDashboard: {
    points: (id: ChartId) => charts.get(id)?.points(),
    timings: () => timings.slice(),
    header: () => last?.header,
    zoom: zoomAndMeasure,
  },
});

host.listen((m) => {
  if (m.type === 'frame') onFrame(m);
});
// Tell the host the size (and restored zoom) before the first frame, so it is built for it.
sendView();
