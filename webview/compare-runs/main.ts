// Compare runs, webview side: one chart with the loss of every picked run, zoom and smoothing
// like the dashboard. Keeps the picked runs in its state so a reload restores the comparison.
import type { CompareFromWebview, CompareFrameMessage, CompareState, CompareToWebview } from '../../core/panels/dashboard-messages';
import type { XRange } from '../../core/runs/downsample';
import { StepChart } from '../shared/step-chart';
import { connectToHost } from '../shared/vscode-api';
import '../run-dashboard/style.css';

const host = connectToHost<CompareFromWebview, CompareToWebview, CompareState>();
let range: XRange | null = null;
let last: CompareFrameMessage | undefined;

const app = document.getElementById('app')!;
app.innerHTML = `
  <header class="run-header"><div class="title-row"><h1>Compare runs</h1></div><ul id="runs" class="muted"></ul></header>
  <div class="toolbar">
    <label for="smoothing">Smoothing (EMA)</label>
    <input id="smoothing" type="range" min="0" max="0.99" step="0.01" value="0.6">
    <span id="smoothing-value">0.60</span>
    <span class="muted hint">drag: zoom · wheel: zoom · shift-drag: pan · double-click: whole runs</span>
  </div>
  <div id="chart" class="chart-card"></div>`;

const slider = document.getElementById('smoothing') as HTMLInputElement;
slider.addEventListener('input', () => {
  document.getElementById('smoothing-value')!.textContent = Number(slider.value).toFixed(2);
  host.send({ type: 'smoothing', weight: Number(slider.value) });
});

const chart = new StepChart({ title: 'Loss', unit: 'number', height: 420, onRange: (r) => {
  range = r;
  host.send({ type: 'view', range, width: chart.width });
} });
document.getElementById('chart')!.appendChild(chart.element);

host.listen((m) => {
  if (m.type !== 'compare') return;
  last = m;
  host.setState({ runs: m.runs.map((r) => ({ target: r.target, runDir: r.runDir })) });
  const list = document.getElementById('runs')!;
  list.innerHTML = '';
  for (const r of m.runs) {
    const li = document.createElement('li');
    li.textContent = `${r.label} — ${r.status}`;
    list.appendChild(li);
  }
  chart.update(m.loss, range);
});
new ResizeObserver(() => {
  chart.resize();
  host.send({ type: 'view', range, width: chart.width });
}).observe(document.getElementById('chart')!);
Object.assign(window, { fsdpCompare: { points: () => chart.points(), runs: () => last?.runs } });
