// A watched run's status, from what the watch holds: its SLURM job, the ends and starts in its log,
// run.json, whether its processes vanished, and the resume last asked for from this window. Whose a
// start or an end is — this attempt's, an earlier one's — is told by the stream: the attempt run.json
// names (its id, and where its events begin in metrics.jsonl), the id each run_start and run_end
// carries, and where the end lies in the file; clocks and pids only for logs and run.json from
// before attempts were named.
import { jobRunStatus, type RunFacts, type SlurmJob } from '../slurm/slurm-state';
import type { RunEndEvent, RunStartEvent } from '../../core/protocol/metrics';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { DashboardHeader } from '../../core/panels/dashboard-messages';
import type { RunHistory } from '../../core/runs/run-history';
import { ENDED, NO_RESUME, type ResumeMark } from './watched-run';

/** queued, cancelled, timed-out and preempted: runs submitted to SLURM (runs/slurm/slurm-state.ts). The one list is the
 * protocol's (core/panels/dashboard-messages.ts), which the dashboard's header carries. */
export type RunStatus = DashboardHeader['status'];

export interface StatusFacts {
  history: RunHistory;
  manifest: RunManifest | undefined;
  job: SlurmJob | undefined;
  vanished: string | undefined;
  /** The latest resume asked for from this window (NO_RESUME when none was). */
  resume?: ResumeMark;
  /** Where the history's end, its latest run_end, begins in metrics.jsonl (bytes). */
  endOffset?: number;
  /** Where the history's start, its latest run_start, begins in metrics.jsonl (bytes). */
  startOffset?: number;
}

export function runStatusOf(facts: StatusFacts): RunStatus {
  const { history, manifest, job, vanished, endOffset } = facts;
  const resume = facts.resume ?? NO_RESUME;
  if (job) return jobRunStatus(job, runFactsOf(history, manifest));
  const end = history.end;
  // run.json rewritten as live by another attempt than the one whose end the log holds is a resume
  // starting: told by the attempt run.json names, else (run.json without one) by its time and pids.
  const liveAfterEnd =
    end !== undefined &&
    manifest !== undefined &&
    !ENDED.has(manifest.status) &&
    !(
      endOfAttempt(manifest, end, endOffset) ??
      ((manifest.updated ?? 0) <= end.time || manifestOfEndedAttempt(history, manifest))
    );
  // A resume asked for after the end (this window pressed Resume or "Continue training") is one
  // starting, even while run.json is not yet rewritten by the launch.
  const resumedHere = end !== undefined && endBeforeResume(end, endOffset, resume) && !vanished;
  const resuming = end && (liveAfterEnd || resumedHere);
  if (end && !resuming) return end.status;
  const m = manifest?.status;
  if (resumedHere && !manifestOfResume(manifest, resume)) return 'starting';
  if ((m === 'completed' || m === 'failed' || m === 'stopped') && !startedSince(history, manifest, facts.startOffset))
    return m;
  if (vanished) return 'failed';
  // The stream holds nothing yet of the attempt run.json names (its latest start is an earlier
  // attempt's): that attempt is what run.json says of it — starting — not the last one running.
  if (m && !ENDED.has(m) && history.start && startOfAttempt(manifest, history.start, facts.startOffset) === false)
    return m;
  if (history.start) return 'running';
  if (m) return m;
  return 'unknown';
}

/**
 * Whether the log's latest start is the attempt run.json names: by the attempt it names, else by
 * its place against where that attempt begins. Undefined where neither says (no attempts).
 */
function startOfAttempt(
  manifest: RunManifest | undefined,
  start: RunStartEvent,
  startOffset: number | undefined,
): boolean | undefined {
  const attempt = manifest?.attempt;
  if (!attempt) return undefined;
  if (start.attempt !== undefined) return start.attempt === attempt.id;
  return startOffset === undefined ? undefined : startOffset >= attempt.log_from;
}

/**
 * Whether the log's end came before the resume this window asked for (it is the last attempt's):
 * by where it lies in metrics.jsonl against where the resume's attempt begins, else by the attempt
 * it names, else — a resume whose attempt is not known, a log from before attempts — by the clock.
 */
export function endBeforeResume(end: RunEndEvent, endOffset: number | undefined, resume: ResumeMark): boolean {
  const attempt = resume.attempt;
  if (attempt && endOffset !== undefined) return endOffset < attempt.log_from;
  if (attempt && end.attempt !== undefined) return end.attempt !== attempt.id;
  return end.time < resume.askedAt;
}

/** run.json is already the resume's (its owner rewrote it): by the attempt it names, else by its time. */
function manifestOfResume(manifest: RunManifest | undefined, resume: ResumeMark): boolean {
  if (resume.attempt) return manifest?.attempt?.id === resume.attempt.id;
  return (manifest?.updated ?? 0) > resume.askedAt;
}

/**
 * A start logged after the attempt run.json says ended is a resume running (run.json is read every
 * few seconds): a run_start that names another attempt than run.json's, where that attempt began
 * before it in the stream; without attempts on both sides, one logged after run.json was written.
 */
function startedSince(
  history: RunHistory,
  manifest: RunManifest | undefined,
  startOffset: number | undefined,
): boolean {
  const start = history.start;
  if (history.end || !start) return false;
  const attempt = manifest?.attempt;
  if (attempt && start.attempt !== undefined)
    return start.attempt !== attempt.id && (startOffset === undefined || startOffset >= attempt.log_from);
  return start.time > (manifest?.updated ?? Infinity);
}

/**
 * What SLURM's job state is read against: when the log says the run started and ended, and — where
 * run.json names the attempt its job's owner started and the events name theirs — whether that start
 * and end are this attempt's, which then decides instead of the job's and the events' clocks.
 */
export function runFactsOf(history: RunHistory, manifest?: RunManifest): RunFacts {
  const { start, end } = history;
  const ofAttempt = (e: RunStartEvent | RunEndEvent | undefined) =>
    manifest?.attempt && e?.attempt !== undefined ? e.attempt === manifest.attempt.id : undefined;
  const startOfThisJob = start ? ofAttempt(start) : undefined;
  const endOfThisJob = end ? ofAttempt(end) : undefined;
  return {
    ...(start ? { startedAt: start.time } : {}),
    ...(end ? { end: { status: end.status, time: end.time } } : {}),
    ...(startOfThisJob !== undefined ? { startOfThisJob } : {}),
    ...(endOfThisJob !== undefined ? { endOfThisJob } : {}),
  };
}

/**
 * Whether the log's end is the attempt run.json is the snapshot of: it begins at or after where
 * that attempt's events begin (manifest.attempt.log_from), an order the stream itself gives, or (its
 * place unknown) it names that attempt — not the clocks of two hosts or the pids of two processes.
 * Undefined where run.json names no attempt (one written before attempts were recorded, or a SLURM
 * run's before its job starts): the caller then judges by the times and pids as before.
 */
function endOfAttempt(manifest: RunManifest, end: RunEndEvent, endOffset: number | undefined): boolean | undefined {
  const attempt = manifest.attempt;
  if (!attempt) return undefined;
  if (endOffset !== undefined) return endOffset >= attempt.log_from;
  return end.attempt === undefined ? undefined : end.attempt === attempt.id;
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
