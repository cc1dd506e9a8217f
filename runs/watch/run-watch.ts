// Watching one run: its manifest, what it logs folded into a RunHistory from the first byte — its
// metrics.jsonl, and the TensorBoard event files of a person's own command or of a TensorBoard log
// folder attached as a run — the connection state, and whether its processes are still alive.
// Dashboards, the runs view and the status bar all read the same RunWatch, so they never disagree.
// It composes its parts, each a job of its own: following the stream (run-stream.ts, with the
// run's other outputs in run-outputs.ts), liveness (run-liveness.ts), SLURM (slurm-job-watch.ts),
// and the status read across a resume (run-status.ts).
import { jobReason, jobRunStatus, jobWaiting, type SlurmJob } from '../slurm/slurm-state';
import type { RecordProblem } from './decoders/record-decoder';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { RunLogEntry } from '../../core/protocol/run-log-reader';
import { RunHistory } from '../../core/runs/run-history';
import type { ConnectionState, RunMachine } from '../machines/run-machine';
import type { SlurmCluster } from '../slurm/slurm-cluster';
import { RunStream } from './run-stream';
import { RunLiveness } from './run-liveness';
import { SlurmJobWatch } from './slurm-job-watch';
import { endBeforeResume, runFactsOf, runStatusOf, type RunStatus } from './run-status';
import { NO_RESUME, runKey, type ResumeMark, type RunRef, type WatchedRun } from './watched-run';

export { runKey, type RunRef } from './watched-run';
export type { RunStatus } from './run-status';

export interface RunWatchChange {
  /** Events appended since the last change (empty for connection or status changes). */
  entries: RunLogEntry[];
}

export class RunWatch {
  readonly history = new RunHistory();
  manifest: RunManifest | undefined;
  connection: ConnectionState = { state: 'closed' };
  readonly problems: RecordProblem[] = [];
  /**
   * Set when the run ended without a run_end: its processes are gone, or its launcher wrote the
   * exit into run.json (a runtime killed by a signal, a config refused before the first step).
   */
  vanished: string | undefined;
  /** The person pressed Stop on this run (its "stopped by signal 15" is then their own doing). */
  stopRequested = false;
  /** Why the manifest could not be read, if it could not. */
  manifestError: string | undefined;
  /** The SLURM job behind the run (run.json's slurm.job_id) as last reported; undefined for other runs. */
  job: SlurmJob | undefined;
  /** The latest resume asked for from this window (see followResume()). */
  private resume: ResumeMark = NO_RESUME;
  private disposed = false;
  private readonly listeners = new Set<(change: RunWatchChange) => void>();
  /** What the parts below may read of and ask of this watch. */
  private readonly run: WatchedRun;
  private readonly stream: RunStream;
  private readonly slurm: SlurmJobWatch;
  private readonly liveness: RunLiveness;

  /** `cluster`: the target as a SLURM login host, for runs submitted there. */
  constructor(
    readonly ref: RunRef,
    readonly machine: RunMachine,
    cluster?: SlurmCluster,
  ) {
    this.run = {
      ref,
      machine,
      history: this.history,
      metricsFile: this.metricsFile,
      manifest: () => this.manifest,
      disposed: () => this.disposed,
      endBeforeResume: () => {
        const end = this.history.end;
        return end ? endBeforeResume(end, this.stream.endOffset, this.resume) : this.resume !== NO_RESUME;
      },
      isLive: () => this.isLive(),
      refreshManifest: () => this.refreshManifest(),
      follow: () => this.follow(),
      stopFollowing: () => {
        // A SLURM run's job is watched on after a run_end: a requeued job starts the run again.
        if (!this.slurm.watched()) this.liveness.cancel();
        this.stream.stop();
      },
      emit: (entries) => {
        for (const l of this.listeners) l({ entries });
      },
    };
    this.stream = new RunStream(this.run, this.problems, {
      connection: (state) => (this.connection = state),
      // The trainer started while its job was last seen queued: ask SLURM again now, not at the next poll.
      runStarted: () => {
        if (this.job && jobWaiting(this.job)) void this.refreshJob();
      },
    });
    this.slurm = new SlurmJobWatch(
      this.run,
      this.stream,
      { get: () => this.job, set: (job) => (this.job = job) },
      cluster,
    );
    this.liveness = new RunLiveness(this.run, this.stream, this.slurm, {
      get: () => this.vanished,
      set: (reason) => (this.vanished = reason),
    });
  }

  get key(): string {
    return runKey(this.ref);
  }

  get metricsFile(): string {
    return `${this.ref.runDir}/metrics.jsonl`;
  }

  /** The event files this watch reads. */
  get logFiles(): string[] {
    return this.stream.outputs.logFiles;
  }

  /** Some printed steps' times were estimated from their place in the output (run-outputs.ts printedTimes). */
  get printedTimesEstimated(): boolean {
    return this.stream.outputs.printedTimesEstimated;
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
    const jobId = this.slurm.id();
    if (!jobId) return;
    await this.slurm.check(jobId);
    this.run.emit([]);
    if (this.slurm.watched()) this.liveness.schedule();
  }

  /**
   * After a resume or relaunch in this run's folder: run.json read again (the launch rewrote it),
   * then followed on. An end before the resume's attempt in metrics.jsonl is the last run's, not this
   * one's, even when it is read only now (Resume pressed as the stop's last lines arrive, or while the
   * watch still settles that end). `owner`: the resume's owner's pid — run.json naming it first is its
   * own (the launch returned once it was), so the attempt run.json names is the resume's, and the
   * stream's order decides; without it (or a run.json naming no attempt), `askedAt` (seconds: when
   * the resume was asked for) against the end's time.
   */
  async followResume(askedAt: number, owner?: number): Promise<void> {
    this.resume = { askedAt };
    await this.refreshManifest();
    const m = this.manifest;
    if (owner !== undefined && m?.pids?.[0] === owner && m.attempt) this.resume = { askedAt, attempt: m.attempt };
    this.follow();
  }

  /**
   * Starts following metrics.jsonl (and the run's logs) from where this watch stopped reading; asked
   * while still following (a relaunch as the last end is settled), follows on past that end.
   */
  follow(): void {
    if (this.disposed) return;
    if (this.stream.following) return this.stream.followOn();
    this.vanished = undefined;
    this.stream.follow();
    void this.liveness.noteCgroup();
    if (this.ref.format !== 'tensorboard') this.liveness.schedule();
  }

  status(): RunStatus {
    const { history, manifest, job, vanished, resume } = this;
    const { endOffset, startOffset } = this.stream;
    return runStatusOf({ history, manifest, job, vanished, resume, endOffset, startOffset });
  }

  /** Why the run ended, in words, when it did not complete. */
  endReason(): string | undefined {
    if (this.stopRequested && this.status() === 'stopped')
      return `stopped with Stop at step ${this.history.lastStep ?? 0}`;
    const fromJob = this.job && jobReason(this.job, jobRunStatus(this.job, runFactsOf(this.history, this.manifest)));
    if (fromJob) return fromJob;
    return this.vanished ?? this.history.end?.reason ?? this.manifest?.end_reason;
  }

  isLive(): boolean {
    const s = this.status();
    return s === 'starting' || s === 'running' || s === 'queued';
  }

  async refreshManifest(): Promise<void> {
    const before = this.status();
    try {
      this.manifest = await this.machine.readManifest(this.ref.runDir);
      this.manifestError = undefined;
      this.stream.manifestRead();
    } catch (e) {
      this.manifestError = (e as Error).message;
    }
    // A status that run.json alone changed is told like one an event changed: the end's last read
    // (followToTheEnd) stops following without an event after it, and the status bar, which redraws
    // only on events, kept "running" while the dashboard (redrawn on its own timer) said completed.
    if (this.status() !== before) this.run.emit([]);
  }

  /** Reads what was appended now (local runs; ssh tails deliver by themselves). */
  poke(): void {
    this.stream.poke();
  }

  dispose(): void {
    this.disposed = true;
    this.run.stopFollowing();
    this.liveness.cancel();
    this.listeners.clear();
  }
}
