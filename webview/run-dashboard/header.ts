// The dashboard header, webview side: name, status, where it runs, the connection; step, loss,
// elapsed time, tokens seen, ETA; the long operation under way with its seconds counting; why it
// ended; the config summary; and which actions apply. Counters tick by themselves between frames.
import type { DashboardHeader } from '../../core/panels/dashboard-messages';
import { formatCount, formatDuration } from '../../core/runs/number-format';

export const HEADER_HTML = `
  <header class="run-header">
    <div class="title-row">
      <h1 id="run-name">Run</h1>
      <vscode-badge id="run-status">…</vscode-badge>
      <span id="run-target" class="muted"></span>
      <span id="connection" class="connection"></span>
    </div>
    <div class="progress-row">
      <span id="run-step"></span><span id="run-loss"></span><span id="run-elapsed" title="Time the run has been running (pauses between a stop and a resume are not counted)"></span><span id="run-tokens" title="Training tokens consumed, all ranks"></span><span id="run-eta"></span><span id="run-problems" class="warning"></span>
    </div>
    <div id="run-phase" class="phase" role="status" hidden><vscode-progress-ring></vscode-progress-ring><span id="run-phase-text"></span></div>
    <div id="run-reason" class="error"></div>
    <div id="run-metrics-note" class="note" hidden></div>
    <dl id="run-summary" class="summary"></dl>
    <div class="actions">
      <vscode-button id="action-stop" data-action="stop" icon="debug-stop">Stop</vscode-button>
      <vscode-button id="action-resume" data-action="resume" icon="debug-continue">Resume</vscode-button>
      <vscode-button id="action-spikes" data-action="spikes" icon="pulse" secondary>Spikes</vscode-button>
      <vscode-button id="action-diagnostics" data-action="diagnostics" icon="bug" secondary>NaN diagnostics</vscode-button>
      <vscode-button data-action="openConfig" icon="go-to-file" secondary>Open config</vscode-button>
      <vscode-button data-action="openFolder" icon="folder-opened" secondary>Open run folder</vscode-button>
      <vscode-button id="export-csv" icon="desktop-download" secondary title="Save every metric of the run, one row per step">Export CSV</vscode-button>
    </div>
  </header>`;

const $ = (id: string) => document.getElementById(id)!;

/** A phase is shown once it has lasted this long: a quick checkpoint save does not flash. */
const PHASE_SHOWN_AFTER_S = 1;

let current: DashboardHeader | undefined;
/** Local time when the header arrived, and the host's view of "now" then is not known: elapsed counters run on from the frame. */
let receivedAt = 0;

export function renderHeader(h: DashboardHeader): void {
  current = h;
  receivedAt = Date.now();
  $('run-name').textContent = h.name;
  const status = $('run-status');
  // A run whose loss (or any metric) ended NaN did not succeed, whatever it completed: the badge says so, not in green.
  const nan = h.nanSince !== undefined;
  status.textContent = nan ? `${h.status} · ${h.nanText ?? `loss NaN since step ${h.nanSince}`}` : h.status;
  status.dataset.status = nan && h.status === 'completed' ? 'completed-nan' : h.status;
  // Two runs of one config share a name: when it started (and its id, on hover) tells them apart.
  const started =
    h.startedAt !== undefined
      ? ` · started ${new Date(h.startedAt * 1000).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' })}`
      : '';
  $('run-target').textContent = `${h.target === 'local' ? 'this machine' : `on ${h.target}`}${started}`;
  $('run-name').title = `run ${h.runId}`;
  $('run-step').textContent =
    h.step !== undefined ? `step ${h.step}${h.maxSteps ? ` / ${h.maxSteps}` : ''}` : 'no steps yet';
  $('run-loss').textContent = h.loss !== undefined ? `loss ${h.loss === null ? 'NaN' : h.loss.toFixed(4)}` : '';
  $('run-tokens').textContent = h.tokensSeen !== undefined ? `${formatCount(h.tokensSeen)} tokens` : '';
  $('run-eta').textContent = h.etaSeconds !== undefined ? `ETA ${formatDuration(h.etaSeconds)}` : '';
  $('run-problems').textContent = h.problems ? `${h.problems} unreadable log line${h.problems > 1 ? 's' : ''}` : '';
  $('run-reason').textContent = h.reason ?? '';
  // A stop the person asked for is not an error.
  $('run-reason').className = h.status === 'failed' ? 'error' : 'muted';
  $('run-metrics-note').textContent = h.metricsNote ?? '';
  $('run-metrics-note').hidden = !h.metricsNote;
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
  $('action-spikes').hidden = h.spikes === 0;
  const gradNorm = h.spikes - h.lossSpikes;
  $('action-spikes').textContent =
    `Spikes (${[h.lossSpikes ? `${h.lossSpikes} loss` : '', gradNorm ? `${gradNorm} grad norm` : ''].filter(Boolean).join(', ')})`;
  tick();
}

/** Seconds the run's clock has moved since the header was built (it is not sent every second). */
function sinceFrame(): number {
  return (Date.now() - receivedAt) / 1000;
}

/** Elapsed time and the phase's seconds count on between frames. */
export function tick(): void {
  const h = current;
  if (!h) return;
  const now = Date.now() / 1000;
  if (h.activeBefore !== undefined) {
    // Running time only: a pause before "Continue training" or a Resume is not counted.
    const running = h.runningSince !== undefined ? Math.max(0, now - h.runningSince) : 0;
    $('run-elapsed').textContent = `${formatDuration(h.activeBefore + running)} elapsed`;
  } else if (h.startedAt !== undefined) {
    const end = h.endedAt ?? now;
    $('run-elapsed').textContent = `${formatDuration(Math.max(0, end - h.startedAt))} elapsed`;
  } else $('run-elapsed').textContent = '';
  const phase = h.phase;
  const lasted = phase ? Math.max(0, now - phase.since, sinceFrame()) : 0;
  const el = $('run-phase');
  el.hidden = !phase || lasted < PHASE_SHOWN_AFTER_S;
  if (phase)
    $('run-phase-text').textContent =
      `${phase.label}… ${formatDuration(lasted)}${phase.detail ? ` — ${phase.detail}` : ''}`;
}

export function header(): DashboardHeader | undefined {
  return current;
}
