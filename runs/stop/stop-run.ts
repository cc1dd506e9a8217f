// Stopping a run on this machine or an SSH host: the graceful stop signal to its process group
// (SIGTERM, or SIGUSR1 where mpirun leads the group: it forwards that one to every rank instead of
// aborting them), then SIGKILL if the group outlives the grace period, then SIGKILL to ranks that
// mpirun put in process groups of their own. Nothing is signalled before the machine has said the
// group is the run's (run-group.ts); a SLURM run is stopped through the scheduler instead
// (slurm/slurm-control.ts).
import type { RunManifest } from '../../core/protocol/run-manifest';
import { gracefulStopSignal } from '../launch/mpirun';
import type { RunMachine, StopSignal } from '../machines/run-machine';
import { runGroupMarkOf } from './run-group';

export type StopOutcome =
  /** Nothing was signalled: the reason, for the person who asked. */
  | { stopped: false; refused: string }
  /** The group was already gone: nothing to stop. */
  | { stopped: false; gone: true }
  | { stopped: true; signal: StopSignal; killed: boolean; strays: number[] };

export interface StopOptions {
  /** How long the run gets to stop by itself (save a checkpoint) before SIGKILL. */
  graceMs: number;
  /** The process group the launch reported, for a run.json that names none. */
  launchedPgid?: number;
  /** Told once the graceful signal is sent (the UI shows progress while the run saves). */
  signalled?(signal: StopSignal, pgid: number): void;
  /** Aborted when the person asks to kill the run now instead of waiting out the grace period. */
  killNow?: AbortSignal;
}

export async function stopRun(machine: RunMachine, manifest: RunManifest, opts: StopOptions): Promise<StopOutcome> {
  // The pids are read now: a Resume pressed while this stop finishes rewrites run.json with pids
  // that must live.
  const mark = runGroupMarkOf(manifest, opts.launchedPgid);
  if (!mark)
    return {
      stopped: false,
      refused: 'its run.json names no process group (it was not launched by FSDP Studio): stop it where it was started',
    };
  const pgid = mark.pgid;
  const first = await machine.checkRunGroup(mark);
  if (first.verdict === 'refused') {
    const older =
      manifest.leader_start === undefined
        ? ` (a run started before FSDP Studio marked its processes cannot be told apart: stop it from a terminal with kill -TERM -${pgid} if it is yours)`
        : '';
    return { stopped: false, refused: `${first.reason}${older}` };
  }
  if (first.verdict === 'gone' && first.markedPids.length === 0) return { stopped: false, gone: true };
  const signal = gracefulStopSignal(manifest.command);
  if (first.verdict === 'ok') {
    await machine.signal(pgid, signal);
    opts.signalled?.(signal, pgid);
    const deadline = Date.now() + opts.graceMs;
    while (Date.now() < deadline && !opts.killNow?.aborted && (await machine.isAlive(pgid)) !== false)
      await new Promise((r) => setTimeout(r, 500));
  }
  let killed = false;
  // Asked again before SIGKILL: the grace period is enough for a group id to be taken by another.
  const again = await machine.checkRunGroup(mark);
  if (again.verdict === 'ok' && (await machine.isAlive(pgid)) === true) {
    await machine.signal(pgid, 'SIGKILL');
    killed = true;
  }
  // What run.json names that still carries the run's mark once the group is gone (a worker in a
  // session of its own): looked at after the group's SIGKILL, not before it.
  const after = killed ? await machine.checkRunGroup(mark) : again;
  const strays = after.verdict === 'refused' ? [] : after.markedPids;
  for (const pid of strays) await machine.signal(pid, 'SIGKILL');
  return { stopped: true, signal, killed, strays };
}
