// "FSDP: Compare runs": the loss of several runs overlaid in one chart, each downsampled to the
// chart's width over the visible range, smoothed with the same EMA as the dashboard.
import * as vscode from 'vscode';
import type { CompareFromWebview, CompareState, CompareToWebview } from '../../core/panels/dashboard-messages';
import { downsampleToView, type XRange } from '../../core/runs/downsample';
import { clampSmoothing, SmoothedSeries } from '../../core/runs/smoothing';
import { pickRuns } from '../commands/run-picks';
import type { RunRecord } from '../runs/run-registry';
import { runKey, type RunWatch } from '../runs/run-watch';
import type { Runs } from '../runs/runs';
import { runTitle, targetTitle } from '../views/run-labels';
import { PanelHost } from './panel-host';

export const COMPARE_VIEW_TYPE = 'fsdp.compareRuns';
const FRAME_MS = 100;

export class CompareRuns implements vscode.Disposable {
  private panel: ComparePanel | undefined;
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly extensionUri: vscode.Uri, private readonly runs: Runs) {
    this.disposables = [
      vscode.commands.registerCommand('fsdp.compareRuns', () => this.pickAndShow()),
      vscode.window.registerWebviewPanelSerializer(COMPARE_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel, state: CompareState | undefined) => {
          const records = (state?.runs ?? []).map((r) => this.runs.registry.get(runKey(r))).filter((r): r is RunRecord => !!r);
          this.panel?.dispose();
          this.panel = new ComparePanel(new PanelHost(panel, this.extensionUri, SPEC), records, this.runs);
          this.panel.onDidDispose(() => (this.panel = undefined));
        },
      }),
    ];
  }

  private async pickAndShow(): Promise<void> {
    // Runs written into the workspace since the last look are comparable too, as in Attach.
    await this.runs.discover();
    const records = await pickRuns(this.runs, { title: 'Compare runs: pick two or more', none: 'No runs in this workspace yet: launch or attach to some first.' }, true);
    if (records.length === 0) return;
    this.panel?.dispose();
    this.panel = new ComparePanel(PanelHost.create(this.extensionUri, SPEC), records, this.runs);
    this.panel.onDidDispose(() => (this.panel = undefined));
  }

  dispose(): void {
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

const SPEC = { viewType: COMPARE_VIEW_TYPE, title: 'Compare runs', bundle: 'compare-runs', styles: ['uPlot.min.css'] };

class ComparePanel {
  private readonly watches: RunWatch[];
  private readonly smoothed: SmoothedSeries[];
  private range: XRange | null = null;
  private width = 800;
  private smoothing = 0.6;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly disposed = new vscode.EventEmitter<void>();
  readonly onDidDispose = this.disposed.event;

  constructor(private readonly host: PanelHost<CompareToWebview, CompareFromWebview>, private readonly records: RunRecord[], runs: Runs) {
    this.watches = records.map((r) => runs.watch(r));
    this.smoothed = this.watches.map((w) => new SmoothedSeries(w.history.step.loss));
    for (const w of this.watches) {
      const sub = w.onChange(() => this.schedule());
      this.disposables.push({ dispose: () => sub.dispose() });
    }
    this.disposables.push(
      host.onReady(() => {
        host.clearQueue();
        this.send();
      }),
      host.onMessage((m) => {
        if (m.type === 'view') {
          this.range = m.range;
          this.width = m.width;
        } else if (m.type === 'smoothing') this.smoothing = clampSmoothing(m.weight);
        this.send();
      }),
      host.onDidDispose(() => this.dispose()),
    );
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.host.panel.visible) this.send();
    }, FRAME_MS);
  }

  private send(): void {
    const width = Math.max(50, Math.min(8192, Math.round(this.width)));
    const range = this.range ?? undefined;
    this.host.post({
      type: 'compare',
      runs: this.records.map((r, i) => ({ key: runKey(r), target: r.target, runDir: r.runDir, label: `${runTitle(r, this.watches[i])} (${targetTitle(r.target)})`, status: this.watches[i].status() })),
      loss: this.watches.map((w, i) => {
        const loss = w.history.step.loss;
        const values = this.smoothing > 0 ? this.smoothed[i].values(this.smoothing) : loss.values;
        return { label: runTitle(this.records[i], w), points: downsampleToView(loss.steps, values, range, width) };
      }),
      smoothing: this.smoothing,
    });
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const d of this.disposables.splice(0)) d.dispose();
    this.host.dispose();
    this.disposed.fire();
    this.disposed.dispose();
  }
}
