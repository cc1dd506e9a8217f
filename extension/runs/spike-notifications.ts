// Spike toasts by the one spike rule (core/runs/spikes.ts): a loss spike — the runtime's or one
// the watch finds in the loss itself, for any trainer — is a warning with "Show spikes"; a grad-norm
// excursion that clipping absorbed is only a chart marker. Each spike once, and only when it is
// news: a spike in the history read on attach is on the charts, not in a toast.
import * as vscode from 'vscode';
import type { RunHistory } from '../../core/runs/run-history';
import { describeSpike, SpikeFinder } from '../../core/runs/spikes';
import { upperBound } from '../../core/runs/sorted-search';
import { runTitle } from '../views/run-labels';
import type { Runs } from './runs';

/** A spike logged longer ago than this when read is history, not news (as for other events). */
const FRESH_S = 30;

export function notifySpikes(runs: Runs): vscode.Disposable {
  const finders = new Map<string, SpikeFinder>();
  return runs.onDidAppend(({ watch }) => {
    let finder = finders.get(watch.key);
    if (!finder) finders.set(watch.key, (finder = new SpikeFinder(watch.history)));
    const now = Date.now() / 1000;
    for (const spike of finder.newSpikes()) {
      if (spike.alert === 'marker' || now - timeOfStep(watch.history, spike.step) > FRESH_S) continue;
      const record = runs.registry.get(watch.key);
      const name = record ? runTitle(record, watch) : watch.ref.runDir;
      void vscode.window
        .showWarningMessage(`${name}: ${describeSpike(spike)} at step ${spike.step}.`, 'Show spikes', 'Open dashboard')
        .then((pick) => {
          if (pick === 'Show spikes') void vscode.commands.executeCommand('fsdp.showSpikes', watch.key, spike.step);
          if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
        });
    }
  });
}

/** When a step was logged (the last logged step at or before it); 0 when unknown. */
function timeOfStep(h: RunHistory, step: number): number {
  const t = h.step.time;
  const k = upperBound(t.steps, step) - 1;
  return k >= 0 ? t.values[k] : 0;
}
