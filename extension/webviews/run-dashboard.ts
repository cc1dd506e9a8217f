// The run dashboard panel, host side: one per run, fed from the run's RunWatch. Frames (header,
// downsampled charts, markers) are built at most every FRAME_MS and only while the panel is
// visible; a panel that is shown again, or restored after a window reload, asks for a full frame
// when its script is ready, so it always shows the whole history once.
import * as vscode from 'vscode';
import type { DashboardFromWebview, DashboardHeader, DashboardState, DashboardToWebview } from '../../core/panels/dashboard-messages';
import { DashboardCharts, type ChartView } from '../../core/runs/dashboard-charts';
import { clampSmoothing } from '../../core/runs/smoothing';
import type { RunRecord } from '../runs/run-registry';
import type { RunWatch } from '../runs/run-watch';
import type { Runs } from '../runs/runs';
import { maxStepsOf, runTitle } from '../views/run-labels';
import { PanelHost, type PanelSpec } from './panel-host';

export const DASHBOARD_VIEW_TYPE = 'fsdp.runDashboard';
/** Shortest time between frames (20 per second at most): smooth to the eye. */
const FRAME_MS = 50;
/**
 * A frame costs the host time to build (downsampling every series: ~80 ms at a million points
 * here); the next one waits this many times as long, so a live run never takes more than a
 * fifth of a core for its dashboard however long it gets.
 */
const COST_FACTOR = 4;
const DEFAULT_SMOOTHING = 0.6;

function spec(title: string): PanelSpec {
  return { viewType: DASHBOARD_VIEW_TYPE, title, bundle: 'run-dashboard', styles: ['uPlot.min.css'] };
}

/** Opens, reveals and restores dashboards; one panel per run. */
export class RunDashboards implements vscode.Disposable {
  private readonly open = new Map<string, RunDashboard>();
  private readonly serializer: vscode.Disposable;

  constructor(private readonly extensionUri: vscode.Uri, private readonly runs: Runs) {
    this.serializer = vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
      deserializeWebviewPanel: async (panel, state: DashboardState | undefined) => {
        const record = state && this.runs.registry.get(`${state.target}:${state.runDir}`);
        if (!state || !record) {
          panel.webview.html = '<!DOCTYPE html><html><body><p>This run is no longer in the workspace\'s runs list.</p></body></html>';
          return;
        }
        this.adopt(panel, record, state);
      },
    });
  }

  show(record: RunRecord): void {
    const key = `${record.target}:${record.runDir}`;
    const existing = this.open.get(key);
    this.runs.focus(key);
    if (existing) {
      existing.reveal();
      return;
    }
    const host = PanelHost.create<DashboardToWebview, DashboardFromWebview>(this.extensionUri, spec(runTitle(record)));
    this.track(key, new RunDashboard(host, this.runs.watch(record), record, this.runs, undefined));
  }

  private adopt(panel: vscode.WebviewPanel, record: RunRecord, state: DashboardState): void {
    const key = `${record.target}:${record.runDir}`;
    this.open.get(key)?.dispose();
    const host = new PanelHost<DashboardToWebview, DashboardFromWebview>(panel, this.extensionUri, spec(runTitle(record)));
    this.track(key, new RunDashboard(host, this.runs.watch(record), record, this.runs, state));
  }

  private track(key: string, dashboard: RunDashboard): void {
    this.open.set(key, dashboard);
    dashboard.onDidDispose(() => {
      if (this.open.get(key) === dashboard) this.open.delete(key);
    });
  }

  dispose(): void {
    this.serializer.dispose();
    for (const d of this.open.values()) d.dispose();
    this.open.clear();
  }
}

class RunDashboard implements vscode.Disposable {
  private readonly charts: DashboardCharts;
  private view: ChartView;
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastFrameAt = 0;
  private lastFrameCost = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly disposed = new vscode.EventEmitter<void>();
  readonly onDidDispose = this.disposed.event;

  constructor(
    private readonly host: PanelHost<DashboardToWebview, DashboardFromWebview>,
    private readonly watch: RunWatch,
    private readonly record: RunRecord,
    private readonly runs: Runs,
    state: DashboardState | undefined,
  ) {
    this.charts = new DashboardCharts(watch.history);
    this.view = { range: state?.range ?? null, width: 800, smoothing: clampSmoothing(state?.smoothing ?? DEFAULT_SMOOTHING) };
    const subscription = watch.onChange(() => this.schedule());
    this.disposables.push(
      { dispose: () => subscription.dispose() },
      host.onReady(() => {
        // The webview (re)loaded: it gets the whole state now; queued frames would be stale.
        host.clearQueue();
        this.sendFrame();
      }),
      host.onMessage((m) => this.receive(m)),
      host.panel.onDidChangeViewState(({ webviewPanel }) => {
        if (webviewPanel.active) this.runs.focus(watch.key);
      }),
      host.onDidDispose(() => this.dispose()),
    );
  }

  reveal(): void {
    this.host.reveal();
  }

  private receive(m: DashboardFromWebview): void {
    switch (m.type) {
      case 'view':
        this.view = { ...this.view, range: m.range, width: m.width };
        this.sendFrame();
        break;
      case 'smoothing':
        this.view = { ...this.view, smoothing: clampSmoothing(m.weight) };
        this.sendFrame();
        break;
      case 'action':
        void vscode.commands.executeCommand(ACTION_COMMANDS[m.action], this.watch.key);
        break;
    }
  }

  private schedule(): void {
    const wait = Math.max(FRAME_MS, COST_FACTOR * this.lastFrameCost) - (Date.now() - this.lastFrameAt);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      // A hidden panel's webview is gone; it asks for a full frame when shown again.
      if (this.host.panel.visible) this.sendFrame();
    }, Math.max(0, wait));
  }

  /** Builds and posts a frame now (zoom and smoothing changes do not wait for the throttle). */
  private sendFrame(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const t0 = Date.now();
    const { charts, markers, extent, totalPoints } = this.charts.build(this.view);
    this.host.post({ type: 'frame', run: { target: this.record.target, runDir: this.record.runDir }, seq: ++this.seq, header: dashboardHeader(this.watch, this.record), charts, markers, ...(extent ? { extent } : {}), totalPoints, smoothing: this.view.smoothing });
    this.lastFrameAt = Date.now();
    this.lastFrameCost = this.lastFrameAt - t0;
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const d of this.disposables.splice(0)) d.dispose();
    this.host.dispose();
    this.disposed.fire();
    this.disposed.dispose();
  }
}

const ACTION_COMMANDS = {
  stop: 'fsdp.stopRun',
  resume: 'fsdp.resumeRun',
  openConfig: 'fsdp.openRunConfig',
  openFolder: 'fsdp.openRunFolder',
  diagnostics: 'fsdp.showDiagnostics',
} as const;

export function dashboardHeader(watch: RunWatch, record: RunRecord): DashboardHeader {
  const h = watch.history;
  const config = (h.start?.config ?? watch.manifest?.config ?? {}) as ConfigShape;
  const maxSteps = watch.manifest?.max_steps ?? maxStepsOf(config);
  const status = watch.status();
  const reason = watch.endReason();
  // A run that ended without run_end has no ETA (and no "live"): it is over.
  const eta = watch.isLive() ? h.etaSeconds(maxSteps) : undefined;
  const c = watch.connection;
  const lastLoss = h.step.loss.lastValue;
  return {
    runId: watch.manifest?.run_id ?? record.runId,
    name: runTitle(record, watch),
    target: record.target,
    status,
    ...(reason && status !== 'completed' && status !== 'running' ? { reason } : {}),
    ...(h.lastStep !== undefined ? { step: h.lastStep } : {}),
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    ...(lastLoss !== undefined ? { loss: Number.isFinite(lastLoss) ? lastLoss : null } : {}),
    ...(eta !== undefined ? { etaSeconds: eta } : {}),
    connection: c.state === 'reconnecting' ? c : { state: c.state },
    summary: configSummary(config, h.start?.n_params, h.start?.world.size ?? watch.manifest?.world.size),
    problems: watch.problems.length,
    anomalies: h.anomalies.length,
    canStop: watch.isLive(),
    canResume: !watch.isLive() && status !== 'completed' && status !== 'unknown',
  };
}

interface ConfigShape {
  model?: { d_model?: number; n_layers?: number; n_heads?: number; vocab_size?: number };
  data?: { seq_len?: number };
  training?: { batch_size_per_gpu?: number; gradient_accumulation_steps?: number; learning_rate?: number; schedule?: string };
  fsdp?: { sharding_strategy?: string };
  mixed_precision?: { param_dtype?: string };
  launch?: { device?: string };
}

function configSummary(c: ConfigShape, nParams: number | undefined, worldSize: number | undefined): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const m = c.model;
  if (m) out.push(['model', `${m.n_layers ?? '?'} layers × d${m.d_model ?? '?'}, ${m.n_heads ?? '?'} heads${nParams ? `, ${formatCount(nParams)} params` : ''}`]);
  out.push(['world', `${worldSize ?? 1} × ${c.launch?.device ?? 'cpu'}${c.fsdp?.sharding_strategy ? `, ${c.fsdp.sharding_strategy}` : ''}${c.mixed_precision?.param_dtype ? `, ${c.mixed_precision.param_dtype}` : ''}`]);
  const t = c.training;
  if (t?.batch_size_per_gpu !== undefined) {
    out.push(['batch', `${t.batch_size_per_gpu ?? '?'} × ${t.gradient_accumulation_steps ?? 1} accum × ${c.data?.seq_len ?? '?'} tokens`]);
    if (t.learning_rate !== undefined) out.push(['lr', `${t.learning_rate}${t.schedule ? ` (${t.schedule})` : ''}`]);
  }
  return out;
}

function formatCount(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(2)}B` : n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}K` : String(n);
}
