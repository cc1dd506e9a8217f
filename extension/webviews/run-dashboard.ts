// The run dashboard panel, host side: one per run, fed from the run's RunWatch. Frames (header,
// downsampled charts, markers) are built at most every FRAME_MS and only while the panel is
// visible; a panel that is shown again, or restored after a window reload, asks for a full frame
// when its script is ready, so it always shows the whole history once. It also follows the run's
// output for the log tab while that tab is open, and saves exports where the person says.
import * as vscode from 'vscode';
import type { DashboardFromWebview, DashboardState, DashboardToWebview } from '../../core/panels/dashboard-messages';
import { DashboardCharts, type ChartView } from '../../core/runs/dashboard-charts';
import { metricsCsv } from '../../core/runs/metrics-csv';
import { buildScalarTags } from '../../core/runs/scalar-tag-charts';
import { clampSmoothing } from '../../core/runs/smoothing';
import { isXAxisMode } from '../../core/runs/x-axis';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';
import { mayReach, type Runs } from '../runs/runs';
import { runTitle, titleAmong } from '../views/run-labels';
import { fileStem, pngFromDataUrl, saveExport } from './export-files';
import { PanelHost, type PanelSpec } from './panel-host';
import { dashboardHeader } from './run-dashboard-header';
import { RunOutputTail } from './run-output-tail';

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

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly runs: Runs,
  ) {
    this.serializer = vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
      deserializeWebviewPanel: async (panel, state: DashboardState | undefined) => {
        const record = state && this.runs.registry.get(`${state.target}:${state.runDir}`);
        if (!state || !record) {
          panel.webview.html =
            "<!DOCTYPE html><html><body><p>This run is no longer in the workspace's runs list.</p></body></html>";
          return;
        }
        if (!mayReach([record.target], `Restoring the dashboard of ${record.runId}`)) {
          panel.dispose();
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
    // Every way a dashboard opens comes here (the runs view, the palette, Attach, a launch).
    if (!mayReach([record.target], `Opening the dashboard of ${record.runId}`)) return;
    const host = PanelHost.create<DashboardToWebview, DashboardFromWebview>(this.extensionUri, spec(runTitle(record)));
    this.track(key, new RunDashboard(host, this.runs.watch(record), record, this.runs, undefined));
  }

  private adopt(panel: vscode.WebviewPanel, record: RunRecord, state: DashboardState): void {
    const key = `${record.target}:${record.runDir}`;
    this.open.get(key)?.dispose();
    const host = new PanelHost<DashboardToWebview, DashboardFromWebview>(
      panel,
      this.extensionUri,
      spec(runTitle(record)),
    );
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
  private ticker: NodeJS.Timeout | undefined;
  private lastFrameAt = 0;
  private lastFrameCost = 0;
  private readonly output: RunOutputTail;
  private closedTagGroups: Set<string>;
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
    this.view = {
      range: state?.range ?? null,
      width: 800,
      smoothing: clampSmoothing(state?.smoothing ?? DEFAULT_SMOOTHING),
      xAxis: isXAxisMode(state?.xAxis) ? state.xAxis : 'step',
    };
    this.output = new RunOutputTail(watch.machine, record.runDir, (chunk) =>
      host.postSettled({ type: 'log', ...chunk }),
    );
    this.closedTagGroups = new Set(state?.closedTagGroups ?? []);
    const subscription = watch.onChange(() => this.schedule());
    this.disposables.push(
      { dispose: () => subscription.dispose() },
      { dispose: () => this.output.stop() },
      host.onReady(() => {
        // The webview (re)loaded: it gets the whole state now; queued frames would be stale. It
        // says again whether its log tab is open.
        host.clearQueue();
        this.output.stop();
        this.sendFrame();
      }),
      host.onMessage((m) => void this.receive(m)),
      host.panel.onDidChangeViewState(({ webviewPanel }) => {
        if (webviewPanel.active) this.runs.focus(watch.key);
        if (!webviewPanel.visible) this.output.stop();
      }),
      host.onDidDispose(() => this.dispose()),
    );
  }

  reveal(): void {
    this.host.reveal();
  }

  private async receive(m: DashboardFromWebview): Promise<void> {
    switch (m.type) {
      case 'view':
        this.view = { ...this.view, range: m.range, width: m.width, xAxis: isXAxisMode(m.xAxis) ? m.xAxis : 'step' };
        this.sendFrame();
        break;
      case 'smoothing':
        this.view = { ...this.view, smoothing: clampSmoothing(m.weight) };
        this.sendFrame();
        break;
      case 'action':
        void vscode.commands.executeCommand(ACTION_COMMANDS[m.action], this.watch.key);
        break;
      case 'tagGroups':
        this.closedTagGroups = new Set(m.closed);
        this.sendFrame();
        break;
      case 'logs':
        if (m.follow) this.output.follow();
        else this.output.stop();
        break;
      case 'exportCsv':
        await saveExport(
          this.record,
          `${fileStem(runTitle(this.record, this.watch))}-metrics.csv`,
          'CSV',
          Buffer.from(metricsCsv(this.watch.history), 'utf8'),
        );
        break;
      case 'exportPng': {
        const png = pngFromDataUrl(m.dataUrl);
        if (png)
          await saveExport(
            this.record,
            `${fileStem(runTitle(this.record, this.watch))}-${fileStem(m.chart)}.png`,
            'PNG',
            png,
          );
        break;
      }
    }
  }

  private schedule(): void {
    const wait = Math.max(FRAME_MS, COST_FACTOR * this.lastFrameCost) - (Date.now() - this.lastFrameAt);
    this.timer ??= setTimeout(
      () => {
        this.timer = undefined;
        // A hidden panel's webview is gone; it asks for a full frame when shown again.
        if (this.host.panel.visible) this.sendFrame();
      },
      Math.max(0, wait),
    );
  }

  /** Builds and posts a frame now (zoom and smoothing changes do not wait for the throttle). */
  private sendFrame(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const t0 = Date.now();
    const { charts, xAxis, extent, totalPoints } = this.charts.build(this.view);
    const header = dashboardHeader(this.watch, this.record, this.charts.spikes.spikes());
    // Two dashboards of one config's runs are told apart in their tabs by their start times.
    const title = titleAmong(this.record, this.runs.records(), (r) =>
      this.runs.existingWatch(`${r.target}:${r.runDir}`),
    );
    if (this.host.panel.title !== title) this.host.panel.title = title;
    // The "all scalars" section follows the step axis (its tags have no elapsed time of their own).
    const tags = buildScalarTags(
      this.watch.history,
      { range: xAxis.mode === 'step' ? this.view.range : null, width: this.view.width },
      this.closedTagGroups,
    );
    this.host.post({
      type: 'frame',
      run: { target: this.record.target, runDir: this.record.runDir },
      seq: ++this.seq,
      header,
      charts,
      xAxis,
      ...(extent ? { extent } : {}),
      totalPoints,
      smoothing: this.view.smoothing,
      tags,
    });
    this.lastFrameAt = Date.now();
    this.lastFrameCost = this.lastFrameAt - t0;
    // A save or start-up that ends without a new event (a checkpoint's save is followed by one;
    // a run's end is) is caught by the next event; while one is under way, look again now and then.
    clearTimeout(this.ticker);
    this.ticker = header.phase ? setTimeout(() => this.schedule(), PHASE_RECHECK_MS) : undefined;
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearTimeout(this.ticker);
    for (const d of this.disposables.splice(0)) d.dispose();
    this.host.dispose();
    this.disposed.fire();
    this.disposed.dispose();
  }
}

/** While a long operation shows in the header, frames are rebuilt this often even without events. */
const PHASE_RECHECK_MS = 2000;

const ACTION_COMMANDS = {
  stop: 'fsdp.stopRun',
  resume: 'fsdp.resumeRun',
  openConfig: 'fsdp.openRunConfig',
  openFolder: 'fsdp.openRunFolder',
  diagnostics: 'fsdp.showDiagnostics',
  spikes: 'fsdp.showSpikes',
} as const;
