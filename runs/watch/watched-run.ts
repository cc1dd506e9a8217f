// What the parts of a run's watch share (runs/watch/run-watch.ts composes them): the run it
// watches, the state the watch keeps for everyone, and what each part may ask of the whole.
import type { ManifestAttempt, RunManifest } from '../../core/protocol/run-manifest';
import type { RunLogEntry } from '../../core/protocol/run-log-reader';
import type { RunHistory } from '../../core/runs/run-history';
import type { RunMachine, TargetName } from '../machines/run-machine';

export interface RunRef {
  /** "local" or an SSH host alias. */
  target: TargetName;
  /** Absolute path of the run directory on the target (or of a TensorBoard log folder). */
  runDir: string;
  /** "tensorboard": runDir is a TensorBoard log folder (one run), not a run folder with run.json. */
  format?: 'tensorboard';
}

export function runKey(ref: RunRef): string {
  return `${ref.target}:${ref.runDir}`;
}

/** Run statuses that mean the run ended (run.json's, and run_end's). */
export const ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'stopped']);

/**
 * A resume or relaunch in the run's folder asked for from this window (RunWatch.followResume()): when
 * it was asked for (seconds), and the attempt its owner named in run.json once the launch returned —
 * an end before that attempt's first byte in metrics.jsonl is the last attempt's, whatever the clocks.
 */
export interface ResumeMark {
  askedAt: number;
  attempt?: ManifestAttempt;
}

/** No resume asked for from this window. */
export const NO_RESUME: ResumeMark = { askedAt: -Infinity };

/** A value one part of the watch keeps and another reads or sets. */
export interface Slot<T> {
  get(): T;
  set(value: T): void;
}

export interface WatchedRun {
  readonly ref: RunRef;
  readonly machine: RunMachine;
  readonly history: RunHistory;
  readonly metricsFile: string;
  manifest(): RunManifest | undefined;
  disposed(): boolean;
  /**
   * The log's end (its latest run_end) came before the resume last asked for from this window: it is
   * the last attempt's, and the resume's lines come after it. With no end read: whether one was asked.
   */
  endBeforeResume(): boolean;
  isLive(): boolean;
  refreshManifest(): Promise<void>;
  /** Follows the run's files from where the watch stopped reading (RunWatch.follow()). */
  follow(): void;
  /** Lets the run's files go (their last lines drained), and the liveness checks unless a SLURM job is still watched. */
  stopFollowing(): void;
  /** Tells the watch's listeners of new events (none: a state change). */
  emit(entries: RunLogEntry[]): void;
}

/** After a run's end, its event files get at most this long to deliver their last records. */
export const LOGS_DRAIN_MS = { local: 5000, ssh: 15000 };

/** How long a drain of the run's files may take after its end, by where the run is. */
export function drainLimit(machine: RunMachine, limits: { local: number; ssh: number }): number {
  return machine.target === 'local' ? limits.local : limits.ssh;
}
