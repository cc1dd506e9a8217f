// A watched run's status, from what the watch holds: its SLURM job, the ends and starts in its log,
// run.json, whether its processes vanished, and when a resume was last asked for from this window.
import { jobRunStatus, type RunFacts, type SlurmJob } from '../slurm/slurm-state';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { DashboardHeader } from '../../core/panels/dashboard-messages';
import type { RunHistory } from '../../core/runs/run-history';
import { ENDED } from './watched-run';

/** queued, cancelled, timed-out and preempted: runs submitted to SLURM (runs/slurm/slurm-state.ts). The one list is the
 * protocol's (core/panels/dashboard-messages.ts), which the dashboard's header carries. */
export type RunStatus = DashboardHeader['status'];

export interface StatusFacts {
  history: RunHistory;
  manifest: RunManifest | undefined;
  job: SlurmJob | undefined;
  vanished: string | undefined;
  /** When the latest resume was asked for (seconds); -Infinity when none was. */
  resumedAt: number;
  /** Where the history's end, its latest run_end, begins in metrics.jsonl (bytes). */
  endOffset?: number;
}

export function runStatusOf({ history, manifest, job, vanished, resumedAt, endOffset }: StatusFacts): RunStatus {
  if (job) return jobRunStatus(job, runFactsOf(history));
  const end = history.end;
  // run.json rewritten as live by another attempt than the one whose end the log holds is a resume
  // starting: told by the attempt run.json names, else (run.json without one) by its time and pids.
  const liveAfterEnd =
    end !== undefined &&
    manifest !== undefined &&
    !ENDED.has(manifest.status) &&
    !(
      endOfAttempt(manifest, endOffset) ??
      ((manifest.updated ?? 0) <= end.time || manifestOfEndedAttempt(history, manifest))
    );
  // A resume asked for after the end (this window pressed Resume or "Continue training") is one
  // starting, even while run.json is not yet rewritten by the launch.
  const resumedHere = end !== undefined && resumedAt > end.time && !vanished;
  const resuming = end && (liveAfterEnd || resumedHere);
  if (end && !resuming) return end.status;
  const m = manifest?.status;
  if (resumedHere && (manifest?.updated ?? 0) <= resumedAt) return 'starting';
  // A start logged after run.json last said "ended" is a resume running (run.json is read every few seconds).
  const startedSince = !end && history.start !== undefined && history.start.time > (manifest?.updated ?? Infinity);
  if ((m === 'completed' || m === 'failed' || m === 'stopped') && !startedSince) return m;
  if (vanished) return 'failed';
  if (history.start) return 'running';
  if (m) return m;
  return 'unknown';
}

/** What SLURM's job state is read against: when the log says the run started and ended. */
export function runFactsOf(history: RunHistory): RunFacts {
  const { start, end } = history;
  return {
    ...(start ? { startedAt: start.time } : {}),
    ...(end ? { end: { status: end.status, time: end.time } } : {}),
  };
}

/**
 * Whether the log's end is the attempt run.json is the snapshot of: it begins at or after where
 * that attempt's events begin (manifest.attempt.log_from), an order the stream itself gives, not the
 * clocks of two hosts or the pids of two processes. Undefined where run.json names no attempt (one
 * written before attempts were recorded, or a SLURM run's before its job starts): the caller then
 * judges by the times and pids as before.
 */
function endOfAttempt(manifest: RunManifest | undefined, endOffset: number | undefined): boolean | undefined {
  const from = manifest?.attempt?.log_from;
  return from === undefined || endOffset === undefined ? undefined : endOffset >= from;
}

/**
 * run.json names a process of the attempt whose end the log holds: it is that attempt's owner,
 * writing a poll behind the log (the supervisor turns the runtime's events into run.json, and a
 * step it wrote just after the runtime's run_end must not read as a resume). A resume's run.json
 * names only its own processes (runs/folder/run-folder.ts startingManifest drops the last ones).
 */
function manifestOfEndedAttempt(history: RunHistory, manifest: RunManifest | undefined): boolean {
  const named = new Set(manifest?.pids ?? []);
  return (history.start?.world.ranks ?? []).some((r) => r.pid !== undefined && named.has(r.pid));
}
