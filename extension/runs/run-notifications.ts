// Notifications for what needs a person's attention: a NaN or Inf (reported, or in a logged value),
// a failure, and completion (spikes: spike-notifications.ts) — one toast per event, each with the
// actions that follow from it. Only for events
// written while the editor watches — attaching to an old run does not replay its history as a
// burst of pop-ups.
import * as vscode from 'vscode';
import { jobActive } from '../../runs/slurm/slurm-state';
import type { AnomalyEvent, RunEndEvent } from '../../core/protocol/metrics';
import { nonFiniteWord, type NonFiniteScalar } from '../../core/runs/nonfinite-scalars';
import { describeAnomaly } from '../../core/runs/run-history';
import { completedWords, endStep } from '../../core/runs/end-words';
import type { Runs } from './runs';
import type { RunWatch } from '../../runs/watch/run-watch';
import { runTitle } from '../views/run-labels';
import { runNonFinite } from '../webviews/run-advice-context';

/** Events older than this when read are history, not news. */
const FRESH_S = 30;

export function notifyRunEvents(runs: Runs): vscode.Disposable {
  const windowStart = Date.now();
  // A crash writes no run_end: the watch notices the processes are gone instead. Only runs seen
  // alive in this window, or launched from it, are news; a run that died while the editor was
  // closed is just shown so.
  const vanished = new Set<string>();
  const seenAlive = new Set<string>();
  // A NaN that stops the run is one event: its toast says the run stopped, and the run_end
  // "failed" that follows adds nothing.
  const stoppedByAnomaly = new Set<string>();
  const crashes = runs.onDidChange((watch) => {
    if (!watch?.vanished || vanished.has(watch.key)) return;
    const launchedHere = (runs.registry.get(watch.key)?.launchedAt ?? 0) >= windowStart;
    if (!seenAlive.has(watch.key) && !launchedHere) return;
    vanished.add(watch.key);
    // Killed after a Stop that did not finish in time: the person's own doing, not a crash.
    if (watch.stopRequested) return;
    showFailure(watch, `${title(runs, watch)} failed: ${watch.vanished}.`);
  });
  // A SLURM job ended by the scheduler (cancelled, timed out, preempted, a node failure) says so
  // in its state, not in the log; a failure the trainer reported is told by its run_end below.
  const jobEnds = new Set<string>();
  const jobs = runs.onDidChange((watch) => {
    if (!watch?.job || jobActive(watch.job) || jobEnds.has(watch.key) || !seenAlive.has(watch.key)) return;
    const status = watch.status();
    if (!['cancelled', 'timed-out', 'preempted', 'failed'].includes(status) || watch.history.end?.status === 'failed')
      return;
    jobEnds.add(watch.key);
    void vscode.window
      .showWarningMessage(`${title(runs, watch)}: ${watch.endReason() ?? status}.`, 'Open dashboard')
      .then((pick) => {
        if (pick) void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
      });
  });
  const events = runs.onDidAppend(({ watch, entries }) => {
    const now = Date.now() / 1000;
    for (const { event } of entries) {
      if (event.type === 'run_start') {
        vanished.delete(watch.key);
        stoppedByAnomaly.delete(watch.key);
      }
      if (now - event.time > FRESH_S) continue;
      seenAlive.add(watch.key);
      // Spikes are told by the one spike rule (spike-notifications.ts): loss first, clipped grad norms as markers.
      if (event.type === 'anomaly' && event.kind !== 'spike') {
        if (event.action === 'stop') stoppedByAnomaly.add(watch.key);
        showAnomaly(watch, title(runs, watch), event);
      } else if (event.type === 'run_end') {
        if (event.status === 'failed' && stoppedByAnomaly.delete(watch.key)) continue;
        // The owner's stand-in for a runtime that wrote no end of its own: the watch tells that
        // end from how the processes ended (signal, memory, last stderr lines), as a crash above.
        if (event.stand_in === true) continue;
        showEnd(watch, title(runs, watch), event);
      }
    }
  });
  // A NaN or Inf in a logged scalar (printed, TensorBoard, fsdp_studio.log) while the run goes on:
  // one toast per run, for the first fresh one, when nothing located a NaN (that has its own toast).
  // An ended run's says so in its end's toast instead.
  const toldNonFinite = new Set<string>();
  const loggedNaNs = runs.onDidChange((watch) => {
    if (!watch || toldNonFinite.has(watch.key) || watch.history.nonFinite.size === 0 || !watch.isLive()) return;
    const h = watch.history;
    if (h.anomalies.some((a) => a.kind !== 'spike')) return;
    const now = Date.now() / 1000;
    const first = h.nonFinite.list().find((n) => n.source !== 'runtime' && now - n.time <= FRESH_S);
    if (!first) return;
    toldNonFinite.add(watch.key);
    showLoggedNonFinite(watch, title(runs, watch), first);
  });
  return vscode.Disposable.from(crashes, jobs, events, loggedNaNs);
}

function showLoggedNonFinite(watch: RunWatch, name: string, n: NonFiniteScalar): void {
  const end = runNonFinite(watch);
  const what =
    end?.lossHidden && end.tag === n.tag
      ? end.text
      : `${n.tag} ${nonFiniteWord(n.kind)} at step ${n.step}${n.rank !== null ? `, rank ${n.rank}` : ''}`;
  void vscode.window.showWarningMessage(`${name}: ${what}.`, 'Show diagnostics', 'Open dashboard').then((pick) => {
    if (pick === 'Show diagnostics') void vscode.commands.executeCommand('fsdp.showDiagnostics', watch.key);
    if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
  });
}

function showAnomaly(watch: RunWatch, name: string, event: AnomalyEvent): void {
  const text = `${name}: ${describeAnomaly(event)} at step ${event.step}.`;
  void vscode.window.showErrorMessage(text, 'Show diagnostics', 'Open dashboard').then((pick) => {
    if (pick === 'Show diagnostics') void vscode.commands.executeCommand('fsdp.showDiagnostics', watch.key);
    if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
  });
}

function showEnd(watch: RunWatch, name: string, event: RunEndEvent): void {
  // Any metric it ends with as NaN or Inf: the loss, or the grad norm beside the Trainer's stand-in loss.
  const nonFinite = runNonFinite(watch);
  if (event.status === 'completed' && nonFinite !== undefined) {
    // Not a success to continue from: its weights have been NaN since that step. The NaN view
    // lists logged NaNs as well as located ones.
    void vscode.window
      .showWarningMessage(
        `${name} completed at step ${endStep(event.step, watch.history)}, but not cleanly: ${nonFinite.text}.`,
        'Show diagnostics',
        'Open dashboard',
      )
      .then((pick) => {
        if (pick === 'Show diagnostics') void vscode.commands.executeCommand('fsdp.showDiagnostics', watch.key);
        if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
      });
  } else if (event.status === 'completed') {
    // The step and loss the dashboard shows (a command's run_end does not know the trainer's step).
    void vscode.window
      .showInformationMessage(completedWords(name, event.step, watch.history), 'Open dashboard', 'Continue training…')
      .then((pick) => {
        if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
        if (pick === 'Continue training…') void vscode.commands.executeCommand('fsdp.continueRun', watch.key);
      });
  } else if (event.status === 'failed') {
    // Step 0 is no step: a script that failed on its imports never trained.
    const step = endStep(event.step, watch.history);
    const when = step > 0 ? `at step ${step}` : 'before its first step';
    showFailure(watch, `${name} failed ${when}: ${event.reason ?? 'no reason given'}.`);
  }
  // "stopped": the person stopped it (or a signal did, which they sent); the views say so quietly.
}

/** A failed run: its log says why, and it can continue from its last checkpoint. */
function showFailure(watch: RunWatch, text: string): void {
  void vscode.window.showErrorMessage(text, 'Open log', 'Resume', 'Open dashboard').then((pick) => {
    if (pick === 'Open log') void vscode.commands.executeCommand('fsdp.openRunLog', watch.key);
    if (pick === 'Resume') void vscode.commands.executeCommand('fsdp.resumeRun', watch.key);
    if (pick === 'Open dashboard') void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
  });
}

function title(runs: Runs, watch: RunWatch): string {
  const record = runs.registry.get(watch.key);
  return record ? runTitle(record, watch) : watch.ref.runDir;
}
