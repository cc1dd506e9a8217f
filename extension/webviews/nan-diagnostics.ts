// The NaN diagnostics view, host side: for each NaN or Inf a run reported, where it happened, the
// dump's per-layer statistics and batch, what the policy did, and the usual fixes — applied to the
// run's config file as an ordinary (undoable) edit when the person asks. Spikes have a view of
// their own (spike-view.ts): they have no place in the network and no dump. A NaN or Inf in any
// logged scalar (TensorBoard, printed lines, fsdp_studio.log) that no anomaly located is listed too,
// by its tag, first step and rank, with the fixes in the run's framework's words.
import * as vscode from 'vscode';
import type {
  AnomalyView,
  DiagnosticsFromWebview,
  DiagnosticsState,
  DiagnosticsToWebview,
} from '../../core/panels/diagnostics-messages';
import type { AnomalyEvent } from '../../core/protocol/metrics';
import { anomalyView, nonFiniteViews } from '../../core/runs/anomaly-report';
import { runFromArgument, type RunArgument } from '../commands/run-picks';
import type { RunRecord } from '../../runs/watch/run-registry';
import { runKey, type RunWatch } from '../../runs/watch/run-watch';
import { mayReach, type Runs } from '../runs/runs';
import { runTitle } from '../views/run-labels';
import { applyConfigFix } from './config-fix';
import { runAdvice, runNonFinite } from './run-advice-context';
import { PanelHost } from './panel-host';

export const DIAGNOSTICS_VIEW_TYPE = 'fsdp.nanDiagnostics';
const MAX_DUMP_BYTES = 16 * 2 ** 20;
const SPEC = { viewType: DIAGNOSTICS_VIEW_TYPE, title: 'NaN diagnostics', bundle: 'nan-diagnostics' };

export class NanDiagnostics implements vscode.Disposable {
  private readonly open = new Map<string, DiagnosticsPanel>();
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly runs: Runs,
  ) {
    this.disposables = [
      vscode.commands.registerCommand('fsdp.showDiagnostics', (arg?: RunArgument) => this.show(arg)),
      vscode.window.registerWebviewPanelSerializer(DIAGNOSTICS_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel, state: DiagnosticsState | undefined) => {
          const record = state && this.runs.registry.get(runKey(state));
          if (!record || !mayReach([record.target], `Restoring the NaN diagnostics of ${record.runId}`)) {
            panel.dispose();
            return;
          }
          this.track(record, new PanelHost(panel, this.extensionUri, SPEC));
        },
      }),
    ];
  }

  private async show(arg: RunArgument): Promise<void> {
    const record = await runFromArgument(this.runs, arg, {
      title: 'NaN diagnostics',
      filter: (r) => {
        const h = this.runs.existingWatch(runKey(r))?.history;
        return !!h && (h.anomalies.some(isNanOrInf) || h.nonFinite.size > 0);
      },
      none: 'No run in this workspace has reported a NaN or Inf.',
    });
    if (!record) return;
    const existing = this.open.get(runKey(record));
    if (existing) existing.reveal();
    else if (mayReach([record.target], `Showing the NaN diagnostics of ${record.runId}`))
      this.track(
        record,
        PanelHost.create(this.extensionUri, { ...SPEC, title: `NaN diagnostics: ${runTitle(record)}` }),
      );
  }

  private track(record: RunRecord, host: PanelHost<DiagnosticsToWebview, DiagnosticsFromWebview>): void {
    const key = runKey(record);
    const panel = new DiagnosticsPanel(host, this.runs.watch(record), record);
    this.open.set(key, panel);
    host.onDidDispose(() => {
      if (this.open.get(key) === panel) this.open.delete(key);
    });
  }

  dispose(): void {
    for (const p of this.open.values()) p.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

class DiagnosticsPanel {
  private selected: number | undefined;
  private seen = -1;
  private readonly dumps = new Map<string, { dump?: unknown; error?: string }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly host: PanelHost<DiagnosticsToWebview, DiagnosticsFromWebview>,
    private readonly watch: RunWatch,
    private readonly record: RunRecord,
  ) {
    const sub = watch.onChange(() => {
      if (this.count() !== this.seen) void this.send();
    });
    this.disposables.push(
      { dispose: () => sub.dispose() },
      host.onReady(() => {
        host.clearQueue();
        void this.send();
      }),
      host.onMessage((m) => void this.receive(m)),
      host.onDidDispose(() => this.dispose()),
    );
  }

  reveal(): void {
    this.host.reveal();
  }

  private async receive(m: DiagnosticsFromWebview): Promise<void> {
    if (m.type === 'select') {
      this.selected = m.index;
      await this.send();
    } else if (m.type === 'fix') {
      await applyConfigFix(m.id, this.record, this.watch);
    } else if (m.type === 'openDump') {
      const dump = this.watch.history.anomalies.filter(isNanOrInf)[m.index]?.dump;
      if (dump && this.record.target === 'local')
        await vscode.window.showTextDocument(vscode.Uri.file(`${this.record.runDir}/${dump}`));
    }
  }

  /** What the view lists changes with: the anomalies, and the first non-finite step of each logged series. */
  private count(): number {
    const h = this.watch.history;
    return h.anomalies.length + h.nonFinite.changes;
  }

  private async send(): Promise<void> {
    this.seen = this.count();
    const anomalies = this.watch.history.anomalies.filter(isNanOrInf);
    const config = this.watch.history.start?.config ?? this.watch.manifest?.config;
    const advice = runAdvice(this.record, this.watch);
    const views: AnomalyView[] = [];
    for (const a of anomalies) {
      const d = a.dump ? await this.readDump(a.dump) : {};
      views.push(anomalyView(a, d.dump, d.error, config, advice));
    }
    // NaN or Inf in a logged scalar (TensorBoard, printed lines, fsdp_studio.log) that nothing located.
    views.push(
      ...nonFiniteViews(this.watch.history.nonFinite.list(), anomalies, advice, runNonFinite(this.watch, this.record)),
    );
    this.host.post({
      type: 'diagnostics',
      run: { target: this.record.target, runDir: this.record.runDir, name: runTitle(this.record, this.watch) },
      anomalies: views,
      // The latest located anomaly first (it names the module); else the latest logged NaN.
      selected: Math.min(
        this.selected ?? (anomalies.length ? anomalies.length - 1 : views.length - 1),
        views.length - 1,
      ),
    });
  }

  private async readDump(rel: string): Promise<{ dump?: unknown; error?: string }> {
    const cached = this.dumps.get(rel);
    if (cached) return cached;
    let result: { dump?: unknown; error?: string };
    try {
      const bytes = await this.watch.machine.readFile(
        rel.startsWith('/') ? rel : `${this.record.runDir}/${rel}`,
        MAX_DUMP_BYTES,
      );
      result = { dump: JSON.parse(bytes.toString('utf8')) };
    } catch (e) {
      result = { error: `cannot read the dump ${rel}: ${(e as Error).message}` };
    }
    this.dumps.set(rel, result);
    return result;
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    this.host.dispose();
  }
}

function isNanOrInf(a: AnomalyEvent): boolean {
  return a.kind === 'nan' || a.kind === 'inf';
}
