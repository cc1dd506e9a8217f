// VS Code progress notifications where a person waits on a run with nothing on the charts yet:
// from the launch to the first step (start-up, data loading, the first step of a big model: many
// seconds of empty charts on a CPU), and while a checkpoint is being saved (seconds for a big one).
// Each closes by itself when what it waits for arrives, or the run ends.
import * as vscode from 'vscode';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { checkpointExpectedAfter } from '../../core/runs/checkpoint-schedule';
import type { Runs } from './runs';
import type { RunWatch } from '../../runs/watch/run-watch';
import { runTitle } from '../views/run-labels';

/** A save shorter than this gets no notification: a flash would only distract. */
const SAVE_NOTICE_AFTER_MS = 1000;
/** No wait is shown for longer than this (a run that hangs is the dashboard's to show). */
const LONGEST_WAIT_MS = 30 * 60_000;

/** From a launch (or resume) until its first step: "Starting tiny-cpu: …". */
export function showStartProgress(watch: RunWatch, name: string): void {
  const since = Date.now() / 1000 - 1;
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Starting ${name}` }, (progress) => {
    progress.report({ message: 'starting the trainer…' });
    return waitFor(watch, (events) => {
      for (const e of events) {
        if (e.time < since) continue;
        if (e.type === 'run_start') progress.report({ message: startMessage(e) });
        if (e.type === 'step' || e.type === 'run_end') return true;
      }
      return !!watch.vanished;
    });
  });
}

function startMessage(e: Extract<MetricsEvent, { type: 'run_start' }>): string {
  const params = e.n_params !== undefined ? ` (${(e.n_params / 1e6).toFixed(1)}M parameters)` : '';
  return `model and data are ready${params}; running the first step…`;
}

/**
 * Checkpoint saves of the runs being watched: after a step at which the config saves, a
 * notification until the checkpoint event arrives (only if it takes more than a moment).
 */
export function showCheckpointProgress(runs: Runs): vscode.Disposable {
  const saving = new Set<string>();
  return runs.onDidAppend(({ watch, entries }) => {
    const now = Date.now() / 1000;
    const last = entries[entries.length - 1]?.event;
    // Only a save that starts now: not history read on attach, not one already reported.
    if (!last || last.type !== 'step' || now - last.time > 5 || saving.has(watch.key)) return;
    const config = watch.history.start?.config ?? watch.manifest?.config;
    // A stop's save is the Stop command's own progress notification.
    if (watch.stopRequested || !checkpointExpectedAfter(last.step, config)) return;
    saving.add(watch.key);
    const step = last.step;
    // Read from the watch's state, not from the events of one batch: no arrival can slip between two waits.
    const saved = () => watch.history.markers.some((m) => m.kind === 'checkpoint' && m.step >= step) || !!watch.history.end || !watch.isLive();
    const quick = waitFor(watch, saved, SAVE_NOTICE_AFTER_MS);
    void quick.then(async (done) => {
      if (!done) {
        const record = runs.registry.get(watch.key);
        await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `${record ? runTitle(record, watch) : watch.ref.runDir}: saving the checkpoint of step ${step}…` }, () => waitFor(watch, saved));
      }
      saving.delete(watch.key);
    });
  });
}

/** Resolves true when `done` holds for events appended from now on (or at once), false after `timeoutMs`. */
function waitFor(watch: RunWatch, done: (events: MetricsEvent[]) => boolean, timeoutMs = LONGEST_WAIT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    if (done([])) {
      resolve(true);
      return;
    }
    const subscription = watch.onChange(({ entries }) => {
      if (!done(entries.map((e) => e.event))) return;
      finish(true);
    });
    const timer = setTimeout(() => finish(false), timeoutMs);
    function finish(result: boolean): void {
      clearTimeout(timer);
      subscription.dispose();
      resolve(result);
    }
  });
}
