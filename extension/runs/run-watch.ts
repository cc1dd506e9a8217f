// Watching one run: its manifest, its metrics.jsonl folded into a RunHistory from the first byte,
// the connection state, and whether its processes are still alive. Dashboards, the runs view and
// the status bar all read the same RunWatch, so they never disagree.
import { jobActive, jobReason, jobRunStatus, type RunFacts, type SlurmJob } from '../../core/launch/slurm-state';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { RunLogEntry, RunLogProblem } from '../../core/protocol/run-log-reader';
import { RunHistory } from '../../core/runs/run-history';
import type { ConnectionState, Follower, RunMachine, TargetName } from './run-machine';
import type { SlurmCluster } from './slurm-cluster';
import { goneJob, jobOfRecord, recordJobEnd } from './slurm-run';

export interface RunRef {
  /** "local" or an SSH host alias. */
  target: TargetName;
  /** Absolute path of the run directory on the target. */
  runDir: string;
}

export function runKey(ref: RunRef): string {
  return `${ref.target}:${ref.runDir}`;
}

/** queued, cancelled, timed-out and preempted: runs submitted to SLURM (core/launch/slurm-state.ts). */
export type RunStatus = 'queued' | 'starting' | 'running' | 'completed' | 'failed' | 'stopped' | 'cancelled' | 'timed-out' | 'preempted' | 'unknown';

export interface RunWatchChange {
  /** Events appended since the last change (empty for connection or status changes). */
  entries: RunLogEntry[];
}

const PROBLEMS_KEPT = 50;
/** How often a live run's processes are checked (a crash writes no run_end). */
const LIVENESS_MS = { local: 3000, ssh: 15000 };

export class RunWatch {
  readonly history = new RunHistory();
  manifest: RunManifest | undefined;
  connection: ConnectionState = { state: 'closed' };
  readonly problems: RunLogProblem[] = [];
  /** Set when the run's processes are gone but it never said it ended. */
  vanished: string | undefined;
  /** Why the manifest could not be read, if it could not. */
  manifestError: string | undefined;
  /** The SLURM job behind the run (run.json's slurm.job_id) as last reported; undefined for other runs. */
  job: SlurmJob | undefined;
  private follower: Follower | undefined;
  private offset = 0;
  private liveness: NodeJS.Timeout | undefined;
  private checking = false;
  private disposed = false;
  private readonly listeners = new Set<(change: RunWatchChange) => void>();

  /** `cluster`: the target as a SLURM login host, for runs submitted there. */
  constructor(readonly ref: RunRef, readonly machine: RunMachine, private readonly cluster?: SlurmCluster) {}

  get key(): string {
    return runKey(this.ref);
  }

  get metricsFile(): string {
    return `${this.ref.runDir}/metrics.jsonl`;
  }

  /** Registers a listener for new events and state changes; returns its disposer. */
  onChange(listener: (change: RunWatchChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Reads the manifest and follows metrics.jsonl from where this watch stopped (first: byte 0). */
  async start(): Promise<void> {
    await this.refreshJob();
    this.follow();
  }

  /** Reads the manifest and, for a SLURM run, asks about its current job (after a stop or a resubmission). */
  async refreshJob(): Promise<void> {
    await this.refreshManifest();
    const jobId = this.cluster ? this.manifest?.slurm?.job_id : undefined;
    if (!jobId) return;
    await this.checkJob(jobId);
    this.emit([]);
    if (this.watchesJob()) this.scheduleLiveness();
  }

  /** Starts following again, e.g. after a resume appended to a finished run's log. */
  follow(): void {
    if (this.disposed || this.follower) return;
    this.vanished = undefined;
    this.follower = this.machine.follow(this.metricsFile, this.offset, {
      batch: (batch) => {
        this.offset = batch.offset;
        for (const e of batch.entries) this.history.apply(e.event);
        if (batch.problems.length) {
          this.problems.push(...batch.problems);
          this.problems.splice(0, Math.max(0, this.problems.length - PROBLEMS_KEPT));
        }
        // Stop at the end the run just wrote. (A batch after an older end — a resumed run's first
        // lines — keeps following: its run_start comes after them.)
        if (this.history.end && batch.entries.some((e) => e.event === this.history.end)) this.stopFollowing();
        this.emit(batch.entries);
      },
      connection: (state) => {
        this.connection = state;
        this.emit([]);
      },
    }, this.manifest?.pgid);
    this.scheduleLiveness();
  }

  status(): RunStatus {
    if (this.job) return jobRunStatus(this.job, this.runFacts());
    if (this.history.end) return this.history.end.status;
    const m = this.manifest?.status;
    if (m === 'completed' || m === 'failed' || m === 'stopped') return m;
    if (this.vanished) return 'failed';
    if (this.history.start) return 'running';
    if (m) return m;
    return 'unknown';
  }

  /** Why the run ended, in words, when it did not complete. */
  endReason(): string | undefined {
    const fromJob = this.job && jobReason(this.job, jobRunStatus(this.job, this.runFacts()));
    if (fromJob) return fromJob;
    return this.history.end?.reason ?? this.manifest?.end_reason ?? this.vanished;
  }

  isLive(): boolean {
    const s = this.status();
    return s === 'starting' || s === 'running' || s === 'queued';
  }

  async refreshManifest(): Promise<void> {
    try {
      this.manifest = await this.machine.readManifest(this.ref.runDir);
      this.manifestError = undefined;
    } catch (e) {
      this.manifestError = (e as Error).message;
    }
  }

  /** Reads what was appended now (local runs; ssh tails deliver by themselves). */
  poke(): void {
    this.follower?.poke();
  }

  dispose(): void {
    this.disposed = true;
    this.stopFollowing();
    clearTimeout(this.liveness);
    this.listeners.clear();
  }

  private stopFollowing(): void {
    // A SLURM run's job is watched on after a run_end: a requeued job starts the run again.
    if (!this.watchesJob()) {
      clearTimeout(this.liveness);
      this.liveness = undefined;
    }
    const f = this.follower;
    this.follower = undefined;
    f?.stop();
  }

  private scheduleLiveness(): void {
    clearTimeout(this.liveness);
    const every = this.machine.target === 'local' ? LIVENESS_MS.local : LIVENESS_MS.ssh;
    this.liveness = setTimeout(() => void this.checkLiveness(), every);
  }

  /** Whether the run's SLURM job is to be asked about: it has one that may not have ended. */
  private watchesJob(): boolean {
    return !this.disposed && !!this.cluster && !!this.manifest?.slurm?.job_id && (!this.job || jobActive(this.job));
  }

  private runFacts(): RunFacts {
    const { start, end } = this.history;
    return { ...(start ? { startedAt: start.time } : {}), ...(end ? { end: { status: end.status, time: end.time } } : {}) };
  }

  /**
   * A SLURM run: its job's state stands in for the process group. The run is followed again when
   * a job of it runs after the last run_end (a requeue), and no longer once the job ended; the end
   * is recorded in run.json, which outlives the controller's memory of the job.
   */
  private async checkJob(jobId: string): Promise<void> {
    const asked = await this.cluster!.job(jobId);
    if (asked === 'unreachable') return;
    const job = asked ?? jobOfRecord(this.manifest!) ?? goneJob(jobId);
    this.job = job;
    if (jobActive(job)) {
      const s = this.status();
      if (!this.follower && (s === 'starting' || s === 'running' || s === 'queued')) this.follow();
      return;
    }
    // Its last lines may still be on their way: read, wait a moment, then stop following.
    this.follower?.poke();
    await new Promise((r) => setTimeout(r, 1500));
    if (this.disposed) return;
    this.stopFollowing();
    if (asked && !this.manifest?.slurm?.final_state) {
      await recordJobEnd(this.cluster!.host, this.ref.runDir, job).catch(() => undefined);
      await this.refreshManifest();
    }
  }

  /** A run whose process group is gone without a run_end crashed or was killed. */
  private async checkLiveness(): Promise<void> {
    if (this.disposed || this.checking || (!this.follower && !this.watchesJob())) return;
    this.checking = true;
    try {
      await this.refreshManifest();
      const jobId = this.cluster ? this.manifest?.slurm?.job_id : undefined;
      if (jobId) {
        await this.checkJob(jobId);
        this.emit([]);
        return;
      }
      const pgid = this.manifest?.pgid;
      if (pgid !== undefined && this.isLive()) {
        const alive = await this.machine.isAlive(pgid);
        if (alive === false) {
          // Its last lines may still be on their way: read, wait a moment, then decide.
          this.follower?.poke();
          await new Promise((r) => setTimeout(r, 1500));
          await this.refreshManifest();
          if (this.isLive() && !this.disposed) {
            this.vanished = `the trainer's processes (group ${pgid}) ended without reporting the end of the run; see stderr.log in the run folder`;
            this.stopFollowing();
          }
        }
      }
      this.emit([]);
    } finally {
      this.checking = false;
      if (this.follower || this.watchesJob()) this.scheduleLiveness();
    }
  }

  private emit(entries: RunLogEntry[]): void {
    for (const l of this.listeners) l({ entries });
  }
}
