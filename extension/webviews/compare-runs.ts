// "FSDP: Compare runs": two or more runs side by side — loss, validation loss, learning rate,
// gradient norm and throughput, one line per run on each chart, smoothed with the dashboard's EMA —
// and a table of the config values that differ. One tab per set of runs: comparing the same set
// again shows its tab, another set opens another.
import * as vscode from 'vscode';
import type { CompareFromWebview, CompareState, CompareToWebview } from '../../core/panels/compare-messages';
import { CompareCharts } from '../../core/runs/compare-charts';
import { configDifferences } from '../../core/runs/config-diff';
import type { ChartView } from '../../core/runs/dashboard-charts';
import { clampSmoothing } from '../../core/runs/smoothing';
import { isXAxisMode } from '../../core/runs/x-axis';
import type { RunRecord } from '../../runs/watch/run-registry';
import { runKey, type RunWatch } from '../../runs/watch/run-watch';
import { mayReach, type Runs } from '../runs/runs';
import { distinctTitles, runSummary, targetTitle } from '../views/run-labels';
import { fileStem, pngFromDataUrl, saveExport } from './export-files';
import { PanelHost } from './panel-host';

export const COMPARE_VIEW_TYPE = 'fsdp.compareRuns';
const FRAME_MS = 100;
const SPEC = { viewType: COMPARE_VIEW_TYPE, title: 'Compare runs', bundle: 'compare-runs', styles: ['uPlot.min.css'] };

/** The same runs in any order are the same comparison. */
export function comparisonKey(records: Array<{ target: string; runDir: string }>): string {
  return records
    .map((r) => runKey(r))
    .sort()
    .join('\n');
}

export class CompareRuns implements vscode.Disposable {
  private readonly open = new Map<string, ComparePanel>();
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly runs: Runs,
  ) {
    this.disposables = [
      vscode.commands.registerCommand('fsdp.compareRuns', (...keys: unknown[]) => this.compare(keys)),
      vscode.window.registerWebviewPanelSerializer(COMPARE_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel, state: CompareState | undefined) => {
          const records = (state?.runs ?? [])
            .map((r) => this.runs.registry.get(runKey(r)))
            .filter((r): r is RunRecord => !!r);
          if (records.length < 2) {
            panel.webview.html =
              "<!DOCTYPE html><html><body><p>These runs are no longer in the workspace's runs list.</p></body></html>";
            return;
          }
          const targets = records.map((r) => r.target);
          if (!mayReach(targets, 'Restoring a comparison of runs')) {
            panel.dispose();
            return;
          }
          this.track(
            records,
            new PanelHost(panel, this.extensionUri, { ...SPEC, title: compareTitle(records, this.runs) }),
            state,
          );
        },
      }),
    ];
  }

  /** Compares the runs named by key (from a view or a test), or the ones the person picks. */
  private async compare(keys: unknown[]): Promise<void> {
    const flat = keys.flat().filter((k): k is string => typeof k === 'string');
    const records = flat.length
      ? flat.map((k) => this.runs.registry.get(k)).filter((r): r is RunRecord => !!r)
      : await this.pick();
    if (records.length === 0) return;
    if (records.length < 2) {
      void vscode.window.showWarningMessage('Compare runs needs two or more runs.');
      return;
    }
    const existing = this.open.get(comparisonKey(records));
    const targets = records.map((r) => r.target);
    if (existing) existing.reveal();
    else if (mayReach(targets, 'Comparing runs'))
      this.track(
        records,
        PanelHost.create(this.extensionUri, { ...SPEC, title: compareTitle(records, this.runs) }),
        undefined,
      );
  }

  /**
   * A multi-select pick that stays open when focus moves (a dashboard's webview loading takes it,
   * and a closed pick would lose what was ticked) and accepts only two or more runs.
   */
  private async pick(): Promise<RunRecord[]> {
    // Runs written into the workspace since the last look are comparable too, as in Attach.
    await this.runs.discover();
    const records = this.runs.records();
    if (records.length < 2) {
      void vscode.window.showInformationMessage(
        records.length
          ? 'Compare runs needs two or more runs; this workspace has one.'
          : 'No runs in this workspace yet: launch or attach to some first.',
      );
      return [];
    }
    records.sort((a, b) => (b.launchedAt ?? 0) - (a.launchedAt ?? 0) || a.runDir.localeCompare(b.runDir));
    const labels = distinctTitles(
      records.map((record) => ({ record, watch: this.runs.existingWatch(runKey(record)) })),
    );
    const items = records.map((record, i) => ({
      label: labels[i],
      description: `${targetTitle(record.target)} · ${runSummary(this.runs.existingWatch(runKey(record)))}`,
      detail: record.runDir,
      record,
    }));
    const pick = vscode.window.createQuickPick<(typeof items)[number]>();
    pick.title = 'Compare runs: pick two or more';
    pick.placeholder = 'Tick the runs to compare, then press Enter';
    pick.canSelectMany = true;
    pick.matchOnDetail = true;
    pick.ignoreFocusOut = true;
    pick.items = items;
    return new Promise<RunRecord[]>((resolve) => {
      let done = false;
      const finish = (result: RunRecord[]) => {
        if (done) return;
        done = true;
        resolve(result);
        pick.dispose();
      };
      pick.onDidChangeSelection((s) => (pick.title = `Compare runs: pick two or more (${s.length} picked)`));
      pick.onDidAccept(() => {
        if (pick.selectedItems.length >= 2) finish(pick.selectedItems.map((i) => i.record));
        else pick.placeholder = 'Pick at least two runs to compare';
      });
      pick.onDidHide(() => finish([]));
      pick.show();
    });
  }

  private track(
    records: RunRecord[],
    host: PanelHost<CompareToWebview, CompareFromWebview>,
    state: CompareState | undefined,
  ): void {
    const key = comparisonKey(records);
    this.open.get(key)?.dispose();
    const panel = new ComparePanel(host, records, this.runs, state);
    this.open.set(key, panel);
    panel.onDidDispose(() => {
      if (this.open.get(key) === panel) this.open.delete(key);
    });
  }

  dispose(): void {
    for (const p of [...this.open.values()]) p.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The tab's title: the runs told apart ("Compare: tiny-cpu · 01:05:12 vs tiny-cpu · 01:07:40"), shortened when long. */
function compareTitle(records: RunRecord[], runs: Runs): string {
  const names = distinctTitles(records.map((record) => ({ record, watch: runs.existingWatch(runKey(record)) })));
  const joined = names.join(' vs ');
  return joined.length <= 72 ? `Compare: ${joined}` : `Compare ${records.length} runs: ${names[0]}, …`;
}

class ComparePanel {
  private readonly watches: RunWatch[];
  private readonly charts: CompareCharts;
  /** The runs as the charts name them: their labels are set again as run.json is read (start times, ids). */
  private readonly compared: Array<{ label: string; history: RunWatch['history'] }>;
  private view: ChartView;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly disposed = new vscode.EventEmitter<void>();
  readonly onDidDispose = this.disposed.event;

  constructor(
    private readonly host: PanelHost<CompareToWebview, CompareFromWebview>,
    private readonly records: RunRecord[],
    private readonly runs: Runs,
    state: CompareState | undefined,
  ) {
    this.watches = records.map((r) => runs.watch(r));
    this.compared = this.watches.map((w) => ({ label: '', history: w.history }));
    this.labelRuns();
    this.charts = new CompareCharts(this.compared);
    this.view = {
      range: null,
      width: 800,
      smoothing: clampSmoothing(state?.smoothing ?? 0.6),
      xAxis: isXAxisMode(state?.xAxis) ? state.xAxis : 'step',
    };
    for (const w of this.watches) {
      const sub = w.onChange(() => this.schedule());
      this.disposables.push({ dispose: () => sub.dispose() });
    }
    this.disposables.push(
      host.onReady(() => {
        host.clearQueue();
        this.send();
      }),
      host.onMessage((m) => void this.receive(m)),
      host.onDidDispose(() => this.dispose()),
    );
  }

  reveal(): void {
    this.host.reveal();
  }

  private async receive(m: CompareFromWebview): Promise<void> {
    if (m.type === 'view')
      this.view = { ...this.view, range: m.range, width: m.width, xAxis: isXAxisMode(m.xAxis) ? m.xAxis : 'step' };
    else if (m.type === 'smoothing') this.view = { ...this.view, smoothing: clampSmoothing(m.weight) };
    else if (m.type === 'exportPng') {
      const png = pngFromDataUrl(m.dataUrl);
      if (png) await saveExport(undefined, `compare-${fileStem(m.chart)}.png`, 'PNG', png);
      return;
    }
    this.send();
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.host.panel.visible) this.send();
    }, FRAME_MS);
  }

  /** Each run's name, told apart from the others (two runs of one config differ by start time); the tab's title with them. */
  private labelRuns(): string[] {
    const names = distinctTitles(this.records.map((record, i) => ({ record, watch: this.watches[i] })));
    names.forEach((n, i) => (this.compared[i].label = n));
    const title = compareTitle(this.records, this.runs);
    if (this.host.panel.title !== title) this.host.panel.title = title;
    return names;
  }

  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const names = this.labelRuns();
    const { charts, xAxis } = this.charts.build(this.view);
    this.host.post({
      type: 'compare',
      runs: this.records.map((r, i) => {
        const w = this.watches[i];
        const loss = w.history.step.loss.lastValue;
        return {
          key: runKey(r),
          target: r.target,
          runDir: r.runDir,
          label: `${names[i]} (${targetTitle(r.target)})`,
          status: w.status(),
          ...(w.history.lastStep !== undefined ? { step: w.history.lastStep } : {}),
          ...(loss !== undefined ? { loss: Number.isFinite(loss) ? loss : null } : {}),
        };
      }),
      charts,
      xAxis,
      configDiff: configDifferences(this.watches.map((w) => w.history.start?.config ?? w.manifest?.config ?? {})),
      smoothing: this.view.smoothing,
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
