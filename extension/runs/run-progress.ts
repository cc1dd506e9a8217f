// VS Code progress notifications where a person waits on a run with nothing on the charts yet:
// from the launch to the first step (start-up, data loading, the first step of a big model: many
// seconds of empty charts on a CPU), and while a checkpoint is being saved (seconds for a big one).
// Each closes by itself when what it waits for arrives, or the run ends.
import * as vscode from 'vscode';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { checkpointExpectedAfter } from '../../core/runs/checkpoint-schedule';
import { worldWords } from '../../core/runs/world-words';
import type { Runs } from './runs';
import type { RunWatch } from '../../runs/watch/run-watch';
import { runTitle } from '../views/run-labels';

/** A save shorter than this gets no notification: a flash would only distract. */
const SAVE_NOTICE_AFTER_MS = 1000;
/** No wait is shown for longer than this (a run that hangs is the dashboard's to show). */
const LONGEST_WAIT_MS = 30 * 60_000;

/**
 * From a launch (or resume) until its first step: "Starting tiny-cpu: …". It closes at the first
 * step whatever logged it (metrics.jsonl, the companion, TensorBoard files, printed lines), at the
 * run's end, or — for a person's command, which may print nothing the watch can read — after
 * COMMAND_WAIT_MS, with a word on where the dashboard says what is read.
 */
export function showStartProgress(watch: RunWatch, name: string): void {
  const since = Date.now() / 1000 - 1;
  const isCommand = () => watch.manifest?.kind === 'command';
  let commandStarted: number | undefined;
  const firstStep = () => {
    const last = watch.history.lastStepTime;
    return last !== undefined && last >= since;
  };
  void vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Starting ${name}` },
    async (progress) => {
      progress.report({ message: 'starting…' });
      let shown = 'starting…';
      const done = await waitFor(
        watch,
        (events) => {
          for (const e of events) {
            if (e.time < since) continue;
            if (e.type === 'run_start') {
              commandStarted = isCommand() ? Date.now() : undefined;
              shown = startMessage(e, isCommand() ? watch : undefined);
              progress.report({ message: shown });
            }
            if (e.type === 'run_end') return true;
          }
          // A command's ranks are counted again as they start (the supervisor writes them into run.json).
          const start = watch.history.start;
          if (commandStarted !== undefined && start && startMessage(start, watch) !== shown) {
            shown = startMessage(start, watch);
            progress.report({ message: shown });
          }
          if (commandStarted !== undefined && Date.now() - commandStarted > COMMAND_WAIT_MS) return true;
          return (
            firstStep() || !!watch.vanished || (watch.history.end !== undefined && watch.history.end.time >= since)
          );
        },
        LONGEST_WAIT_MS,
        COMMAND_CHECK_MS,
      );
      if (done && !firstStep() && watch.isLive() && isCommand()) {
        void vscode.window
          .showInformationMessage(
            `${name} is running, but no step has been read from it yet: the dashboard says what is read and what to add to the launch spec.`,
            'Open dashboard',
          )
          .then((pick) => {
            if (pick) void vscode.commands.executeCommand('fsdp.openDashboard', watch.key);
          });
      }
    },
  );
}

/** A person's command with no step read after this long: the notification gives way to a word on why. */
const COMMAND_WAIT_MS = 60_000;
/** How often a wait looks again without news (a command printing nothing sends none). */
const COMMAND_CHECK_MS = 5_000;

/** `command`: the watch of a person's command, whose world is run.json's (header and toast say the same). */
function startMessage(e: Extract<MetricsEvent, { type: 'run_start' }>, command: RunWatch | undefined): string {
  // A command's run_start comes from the supervisor before Python has even imported torch: nothing is ready yet.
  if (command) {
    const world = worldWords(
      command.manifest?.world ?? { size: e.world.size },
      command.manifest?.command,
      command.history.ranksReported.size,
    );
    return `the command is running (${world.count}${world.source ? `, ${world.source}` : ''}); waiting for its first step…`;
  }
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
    const saved = () =>
      watch.history.markers.some((m) => m.kind === 'checkpoint' && m.step >= step) ||
      !!watch.history.end ||
      !watch.isLive();
    const quick = waitFor(watch, saved, SAVE_NOTICE_AFTER_MS);
    void quick.then(async (done) => {
      if (!done) {
        const record = runs.registry.get(watch.key);
        await vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: `${record ? runTitle(record, watch) : watch.ref.runDir}: saving the checkpoint of step ${step}…`,
          },
          () => waitFor(watch, saved),
        );
      }
      saving.delete(watch.key);
    });
  });
}

/**
 * Resolves true when `done` holds for events appended from now on (or at once), false after
 * `timeoutMs`; with `recheckMs`, `done` is also asked every so often without news.
 */
function waitFor(
  watch: RunWatch,
  done: (events: MetricsEvent[]) => boolean,
  timeoutMs = LONGEST_WAIT_MS,
  recheckMs?: number,
): Promise<boolean> {
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
    const recheck = recheckMs ? setInterval(() => done([]) && finish(true), recheckMs) : undefined;
    function finish(result: boolean): void {
      clearTimeout(timer);
      clearInterval(recheck);
      subscription.dispose();
      resolve(result);
    }
  });
}
