// "FSDP: Stop run": the graceful stop signal to the run's process group (SIGTERM, or SIGUSR1 where
// mpirun leads the group: it forwards that one to every rank instead of aborting them); the trainer
// saves a checkpoint and writes run_end "stopped". SIGKILL if it is still alive after a grace period.
import * as vscode from 'vscode';
import { gracefulStopSignal } from '../../runs/launch/mpirun';
import type { StudioContext } from '../studio-context';
import { stopSlurmRun } from './slurm-runs';
import { runTitle } from '../views/run-labels';
import { runFromArgument, type RunArgument } from './run-picks';

/** How long a run gets to stop by itself before it is killed. */
const GRACE_MS = 20_000;

export function registerStopRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.stopRun', (arg?: RunArgument) => stopRun(studio, arg));
}

async function stopRun(studio: StudioContext, arg: RunArgument): Promise<void> {
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
  await watch.refreshManifest();
  if (watch.manifest?.slurm?.job_id) {
    await stopSlurmRun(studio, record, watch);
    return;
  }
  const pgid = watch.manifest?.pgid ?? record.pgid;
  if (pgid === undefined) {
    void vscode.window.showErrorMessage(`Cannot stop ${record.runId}: its run.json names no process group (it was not launched by FSDP Studio).`);
    return;
  }
  const machine = runs.machine(record.target);
  // The ranks to end if they outlive the group: this run's, read now. (A Resume pressed while the
  // stop finishes rewrites run.json with the new run's pids, which must live.)
  const pids = watch.manifest?.pids ?? [];
  // Its end then reads "stopped with Stop", not the signal's number in red.
  watch.stopRequested = true;
  runs.remember({ ...record, stopRequestedAt: Date.now() });
  try {
    const stop = gracefulStopSignal(watch.manifest?.command);
    await machine.signal(pgid, stop);
    studio.output.info(`sent ${stop} to process group ${pgid} of ${record.runDir} (${record.target})`);
    const deadline = Date.now() + GRACE_MS;
    // The trainer finishes its step and saves a checkpoint (seconds for a big model): say so.
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Stopping ${runTitle(record, watch)}: finishing the step and saving a checkpoint…` }, async () => {
      while (Date.now() < deadline && (await machine.isAlive(pgid)) !== false) await new Promise((r) => setTimeout(r, 500));
    });
    if ((await machine.isAlive(pgid)) === true) {
      await machine.signal(pgid, 'SIGKILL');
      studio.output.warn(`${record.runDir} did not stop within ${GRACE_MS / 1000} s of ${stop}: killed (SIGKILL)`);
    }
    // mpirun gives each rank a process group of its own (group id = its pid), outside the one
    // above: the ranks run.json lists are ended too, whatever state they are in.
    for (const pid of pids) if (pid !== pgid && (await machine.isAlive(pid)) === true) await machine.signal(pid, 'SIGKILL');
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot stop ${record.runId}: ${(e as Error).message}`);
    return;
  }
  watch.poke();
}
