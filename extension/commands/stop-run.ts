// "FSDP: Stop run": runs/stop/stop-run.ts checks that the process group run.json names is the
// run's, sends it the graceful stop (the trainer saves a checkpoint and writes run_end "stopped"),
// and SIGKILL if it is still alive after a grace period; this command asks which run, shows the
// progress, and says why when Stop refuses.
import * as vscode from 'vscode';
import { stopRun } from '../../runs/stop/stop-run';
import { stoppingWords } from '../../core/runs/end-words';
import type { StudioContext } from '../studio-context';
import { stopSlurmRun } from './slurm-runs';
import { runTitle } from '../views/run-labels';
import { runFromArgument, type RunArgument } from './run-picks';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';

/**
 * How long a run gets to stop by itself before it is killed (fsdp.stop.graceSeconds): a trainer
 * saves a checkpoint at Stop, which takes minutes for a big model, so the default is generous; the
 * progress notification's Cancel kills at once.
 */
function graceMs(): number {
  const seconds = vscode.workspace.getConfiguration('fsdp').get<number>('stop.graceSeconds', 120);
  return Math.max(1, Number.isFinite(seconds) ? seconds : 120) * 1000;
}

/**
 * The runs this window is stopping now. A second Stop of one of them (a double click, the dashboard's
 * button and the palette) is told "already stopping" and sends nothing: the first Stop's
 * notification already offers Kill now, and a second signal would only race the checkpoint.
 */
const stopping = new WeakSet<RunWatch>();

export function registerStopRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.stopRun', (arg?: RunArgument) => stopPickedRun(studio, arg));
}

async function stopPickedRun(studio: StudioContext, arg: RunArgument): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('Stopping a run sends signals to its processes: trust this workspace first.');
    return;
  }
  const runs = studio.runs;
  const record = await runFromArgument(runs, arg, {
    title: 'Stop run',
    filter: (r) => runs.existingWatch(`${r.target}:${r.runDir}`)?.isLive() ?? false,
    none: 'No live runs to stop.',
  });
  if (!record) return;
  const watch = runs.watch(record);
  if (stopping.has(watch)) {
    void vscode.window.showInformationMessage(
      `${runTitle(record, watch)} is already stopping. To end it at once, use Cancel (kill now) on its stopping notification.`,
    );
    return;
  }
  // Taken before the first await: two Stops arriving together both get this far in one turn.
  stopping.add(watch);
  try {
    await stopWatchedRun(studio, record, watch);
  } finally {
    stopping.delete(watch);
  }
}

async function stopWatchedRun(studio: StudioContext, record: RunRecord, watch: RunWatch): Promise<void> {
  const runs = studio.runs;
  await watch.refreshManifest();
  if (watch.manifest?.slurm?.job_id) {
    await stopSlurmRun(studio, record, watch);
    return;
  }
  const machine = runs.machine(record.target);
  const manifest = watch.manifest;
  if (!manifest) {
    void vscode.window.showErrorMessage(
      `Cannot stop ${record.runId}: its run.json cannot be read, so what to signal is unknown.`,
    );
    return;
  }
  // Its end then reads "stopped with Stop", not the signal's number in red.
  watch.stopRequested = true;
  runs.remember({ ...record, stopRequestedAt: Date.now() });
  const grace = graceMs();
  const killNow = new AbortController();
  try {
    let progress: Thenable<void> | undefined;
    let saved: () => void = () => undefined;
    const outcome = await stopRun(machine, manifest, {
      graceMs: grace,
      killNow: killNow.signal,
      ...(record.pgid !== undefined ? { launchedPgid: record.pgid } : {}),
      signalled: (signal, pgid) => {
        studio.output.info(`sent ${signal} to process group ${pgid} of ${record.runDir} (${record.target})`);
        // Our trainer finishes its step and saves a checkpoint (seconds for a big model): say so; a
        // person's command is only asked to end.
        const words = stoppingWords(runTitle(record, watch), {
          command: manifest.kind === 'command',
          config: watch.history.start?.config ?? manifest.config,
          history: watch.history,
        });
        progress = vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: words.title,
            cancellable: true,
          },
          (report, cancel) => {
            report.report({ message: `killed if still running after ${grace / 1000} s; Cancel kills it now` });
            cancel.onCancellationRequested(() => {
              studio.output.warn(`Stop ${record.runDir}: kill now asked for (${words.killNow})`);
              killNow.abort();
            });
            return new Promise<void>((resolve) => (saved = resolve));
          },
        );
      },
    });
    saved();
    await progress;
    if (!outcome.stopped && 'refused' in outcome) {
      watch.stopRequested = false;
      studio.output.warn(`Stop ${record.runDir} (${record.target}) refused: ${outcome.refused}`);
      void vscode.window.showErrorMessage(`Cannot stop ${record.runId}: ${outcome.refused}`);
      return;
    }
    if (outcome.stopped && outcome.killed)
      studio.output.warn(
        killNow.signal.aborted
          ? `${record.runDir} killed (SIGKILL) on request while it was stopping after ${outcome.signal}`
          : `${record.runDir} did not stop within ${grace / 1000} s of ${outcome.signal}: killed (SIGKILL)`,
      );
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot stop ${record.runId}: ${(e as Error).message}`);
    return;
  }
  watch.poke();
}
