// Notifications for what needs a person's attention: a NaN or Inf, a loss spike, a failure, and
// completion. Only for events written while the editor watches — attaching to an old run does not
// replay its history as a burst of pop-ups.
import * as vscode from 'vscode';
import { jobActive } from '../../core/launch/slurm-state';
import { describeAnomaly } from '../../core/runs/run-history';
import type { Runs } from './runs';
import type { RunWatch } from './run-watch';
import { runTitle } from '../views/run-labels';

/** Events older than this when read are history, not news. */
const FRESH_S = 30;

export function notifyRunEvents(runs: Runs): vscode.Disposable {
  // A crash writes no run_end: the watch notices the processes are gone instead. Only runs seen
  // alive in this window are news; a run that died while the editor was closed is just shown so.
  const vanished = new Set<string>();
  const seenAlive = new Set<string>();
  const crashes = runs.onDidChange((watch) => {
    if (!watch?.vanished || vanished.has(watch.key) || !seenAlive.has(watch.key)) return;
    vanished.add(watch.key);
    void vscode.window.showErrorMessage(`${title(runs, watch)} stopped unexpectedly: ${watch.vanished}.`, 'Open dashboard').then((pick) => {
      if (pick) void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
    });
  });
  // A SLURM job ended by the scheduler (cancelled, timed out, preempted, a node failure) says so
  // in its state, not in the log; a failure the trainer reported is told by its run_end below.
  const jobEnds = new Set<string>();
  const jobs = runs.onDidChange((watch) => {
    if (!watch?.job || jobActive(watch.job) || jobEnds.has(watch.key) || !seenAlive.has(watch.key)) return;
    const status = watch.status();
    if (!['cancelled', 'timed-out', 'preempted', 'failed'].includes(status) || watch.history.end?.status === 'failed') return;
    jobEnds.add(watch.key);
    void vscode.window.showWarningMessage(`${title(runs, watch)}: ${watch.endReason() ?? status}.`, 'Open dashboard').then((pick) => {
      if (pick) void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
    });
  });
  const events = runs.onDidAppend(({ watch, entries }) => {
    const now = Date.now() / 1000;
    for (const { event } of entries) {
      if (now - event.time > FRESH_S) continue;
      seenAlive.add(watch.key);
      const name = title(runs, watch);
      // Spikes are told by the one spike rule (spike-notifications.ts): loss first, clipped grad norms as markers.
      if (event.type === 'anomaly' && event.kind !== 'spike') {
        const text = `${name}: ${describeAnomaly(event)} at step ${event.step}.`;
        void vscode.window.showErrorMessage(text, 'Show diagnostics', 'Open dashboard').then((pick) => {
          if (pick === 'Show diagnostics') void vscode.commands.executeCommand('fsdp.showDiagnostics', watch.key);
          if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
        });
      } else if (event.type === 'run_end') {
        if (event.status === 'completed') {
          const loss = watch.history.step.loss.lastValue;
          void vscode.window.showInformationMessage(`${name} completed at step ${event.step}${loss !== undefined ? `, loss ${loss.toFixed(3)}` : ''}.`, 'Open dashboard').then((pick) => {
            if (pick) void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
          });
        } else if (event.status === 'failed') {
          void vscode.window.showErrorMessage(`${name} failed at step ${event.step}: ${event.reason ?? 'no reason given'}.`, 'Open dashboard').then((pick) => {
            if (pick) void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
          });
        }
      }
    }
  });
  return vscode.Disposable.from(crashes, jobs, events);
}

function title(runs: Runs, watch: RunWatch): string {
  const record = runs.registry.get(watch.key);
  return record ? runTitle(record, watch) : watch.ref.runDir;
}
