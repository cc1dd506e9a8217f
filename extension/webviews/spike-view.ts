// "FSDP: Show spikes": a run's loss spikes first, then its grad-norm excursions, in a view of their
// own (a spike has no layer and no dump: the NaN view's questions do not apply). For the one shown,
// its values rounded, what happened to the step, the loss and gradient norm around it, and the
// usual fixes, applied to the run's config as an undoable edit.
import * as vscode from 'vscode';
import type { SpikeFromWebview, SpikeState, SpikeToWebview } from '../../core/panels/spike-messages';
import { orderSpikes, spikeCharts, spikeEntry, spikeFixes } from '../../core/runs/spike-report';
import { SpikeFinder, type Spike } from '../../core/runs/spikes';
import { runFromArgument, type RunArgument } from '../commands/run-picks';
import type { RunRecord } from '../../runs/watch/run-registry';
import { runKey, type RunWatch } from '../../runs/watch/run-watch';
import { mayReach, type Runs } from '../runs/runs';
import { runTitle } from '../views/run-labels';
import { applyConfigFix } from './config-fix';
import { runAdvice } from './run-advice-context';
import { PanelHost } from './panel-host';

export const SPIKES_VIEW_TYPE = 'fsdp.spikes';
const SPEC = { viewType: SPIKES_VIEW_TYPE, title: 'Spikes', bundle: 'spikes', styles: ['uPlot.min.css'] };
const CHART_WIDTH = 700;
const FRAME_MS = 250;

export class SpikeViews implements vscode.Disposable {
  private readonly open = new Map<string, SpikePanel>();
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly runs: Runs,
  ) {
    this.disposables = [
      // Arguments: a run (key or runs-view node), and optionally the step of the spike to show.
      vscode.commands.registerCommand('fsdp.showSpikes', (arg?: RunArgument, step?: number) =>
        this.show(arg, typeof step === 'number' ? step : undefined),
      ),
      vscode.window.registerWebviewPanelSerializer(SPIKES_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel, state: SpikeState | undefined) => {
          const record = state && this.runs.registry.get(runKey(state));
          if (!record || !mayReach([record.target], `Restoring the spikes of ${record.runId}`)) {
            panel.dispose();
            return;
          }
          this.track(
            record,
            new PanelHost(panel, this.extensionUri, { ...SPEC, title: `Spikes: ${runTitle(record)}` }),
            state?.step,
          );
        },
      }),
    ];
  }

  private async show(arg: RunArgument, step: number | undefined): Promise<void> {
    const record = await runFromArgument(this.runs, arg, {
      title: 'Spikes',
      filter: (r) => {
        const w = this.runs.existingWatch(runKey(r));
        return !!w && new SpikeFinder(w.history).spikes().length > 0;
      },
      none: 'No run in this workspace has a loss spike or a grad-norm excursion.',
    });
    if (!record) return;
    const existing = this.open.get(runKey(record));
    if (existing) {
      existing.reveal(step);
      return;
    }
    if (!mayReach([record.target], `Showing the spikes of ${record.runId}`)) return;
    this.track(record, PanelHost.create(this.extensionUri, { ...SPEC, title: `Spikes: ${runTitle(record)}` }), step);
  }

  private track(record: RunRecord, host: PanelHost<SpikeToWebview, SpikeFromWebview>, step: number | undefined): void {
    const key = runKey(record);
    this.open.get(key)?.dispose();
    const panel = new SpikePanel(host, this.runs.watch(record), record, step);
    this.open.set(key, panel);
    host.onDidDispose(() => {
      if (this.open.get(key) === panel) this.open.delete(key);
    });
  }

  dispose(): void {
    for (const p of [...this.open.values()]) p.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

class SpikePanel {
  private readonly finder: SpikeFinder;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly host: PanelHost<SpikeToWebview, SpikeFromWebview>,
    private readonly watch: RunWatch,
    private readonly record: RunRecord,
    private step: number | undefined,
  ) {
    this.finder = new SpikeFinder(watch.history);
    const sub = watch.onChange(() => {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        if (host.panel.visible) this.send();
      }, FRAME_MS);
    });
    this.disposables.push(
      { dispose: () => sub.dispose() },
      host.onReady(() => {
        host.clearQueue();
        this.send();
      }),
      host.onMessage((m) => void this.receive(m)),
      host.onDidDispose(() => this.dispose()),
    );
  }

  reveal(step: number | undefined): void {
    if (step !== undefined) {
      this.step = step;
      this.send();
    }
    this.host.reveal();
  }

  private async receive(m: SpikeFromWebview): Promise<void> {
    const spikes = orderSpikes(this.finder.spikes());
    if (m.type === 'select') {
      this.step = spikes[m.index]?.step;
      this.send();
    } else if (m.type === 'fix') {
      await applyConfigFix(m.id, this.record, this.watch);
    }
  }

  private send(): void {
    const spikes = orderSpikes(this.finder.spikes());
    // The spike asked for, else the first loss spike (the list's first), else nothing.
    let selected = this.step === undefined ? 0 : spikes.findIndex((s) => s.step === this.step);
    if (selected < 0) selected = 0;
    const s: Spike | undefined = spikes[selected];
    this.host.post({
      type: 'spikes',
      run: { target: this.record.target, runDir: this.record.runDir, name: runTitle(this.record, this.watch) },
      spikes: spikes.map(spikeEntry),
      selected,
      charts: s ? spikeCharts(this.watch.history, s, CHART_WIDTH, spikes) : [],
      xAxis: { mode: 'step' },
      fixes: s ? spikeFixes(s, runAdvice(this.record, this.watch)) : [],
    });
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const d of this.disposables.splice(0)) d.dispose();
    this.host.dispose();
  }
}
