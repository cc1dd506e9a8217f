// Watching one run: its manifest, what it logs folded into a RunHistory from the first byte — its
// metrics.jsonl, and the TensorBoard event files of a person's own command or of a TensorBoard log
// folder attached as a run — the connection state, and whether its processes are still alive.
// Dashboards, the runs view and the status bar all read the same RunWatch, so they never disagree.
import os from 'node:os';
import { jobActive, jobReason, jobRunStatus, jobWaiting, type RunFacts, type SlurmJob } from '../slurm/slurm-state';
import { metricsDecoder } from './decoders/metrics-decoder';
import type { RecordProblem } from './decoders/record-decoder';
import type { PrintedEntry } from './decoders/printed/printed-metrics-decoder';
import { PRINTED_FILES, printedDecoderOf, printedTimes, PrintedSteps, type PrintedFile } from './printed-output';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { RunLogEntry } from '../../core/protocol/run-log-reader';
import { describeEndWithoutRunEnd, type MemoryAtEnd } from '../../core/runs/run-end';
import { cgroupMemoryOf, readCgroupMemory, type CgroupMemory } from './cgroup-memory';
import { RunHistory } from '../../core/runs/run-history';
import { runGroupMarkOf } from '../stop/run-group';
import { LogFolderFollower, newLogFolderProgress, type LogFolderOptions } from './log-folder-follower';
import type { ConnectionState, Follower, RunMachine, TargetName } from '../machines/run-machine';
import type { SlurmCluster } from '../slurm/slurm-cluster';
import { goneJob, jobOfRecord, recordJobEnd } from '../slurm/slurm-run';

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

/** queued, cancelled, timed-out and preempted: runs submitted to SLURM (runs/slurm/slurm-state.ts). */
export type RunStatus =
  | 'queued'
  | 'starting'
  | 'running'
  | 'completed'
  | 'failed'
  | 'stopped'
  | 'cancelled'
  | 'timed-out'
  | 'preempted'
  | 'unknown';

export interface RunWatchChange {
  /** Events appended since the last change (empty for connection or status changes). */
  entries: RunLogEntry[];
}

const PROBLEMS_KEPT = 50;
/** How often a live run's processes are checked (a crash writes no run_end). */
const LIVENESS_MS = { local: 3000, ssh: 15000 };
/** After a run's end, its event files get at most this long to deliver their last records. */
const LOGS_DRAIN_MS = { local: 5000, ssh: 15000 };
/** After a run's end, its stdout and stderr are read until they are quiet this long, for at most PRINTED_DRAIN_MS. */
const PRINTED_QUIET_MS = 3000;
const PRINTED_DRAIN_MS = { local: 20_000, ssh: 30_000 };
/** A launched command's event files are those changed from a little before it was created. */
const SINCE_SLACK_S = 60;
/** How much of a file's end is read: stderr.log for a failure message, metrics.jsonl for its last line. */
const TAIL_BYTES = 4096;
const ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'stopped']);

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
  private follower: Follower | undefined;
  private logFolder: LogFolderFollower | undefined;
  private readonly logProgress = newLogFolderProgress();
  private logConnection: ConnectionState = { state: 'closed' };
  private metricsConnection: ConnectionState = { state: 'closed' };
  private offset = 0;
  /** The run's stdout.log and stderr.log read for printed step lines (a person's command), and where each read got to. */
  private readonly printedFollowers = new Map<PrintedFile, Follower>();
  private readonly printedOffsets = new Map<PrintedFile, number>();
  /** The printed steps into the history, from the file the charts take (printed-output.ts). */
  private readonly printedSteps = new PrintedSteps(this.history);
  /** When the latest resume was asked for (seconds; see followResume()). */
  private resumedAt = -Infinity;
  private liveness: NodeJS.Timeout | undefined;
  /** The memory cgroup of the run's process group as first seen alive (runs on this machine). */
  private cgroupAtStart: { pgid: number; cgroup: CgroupMemory } | undefined;
  private checking = false;
  private disposed = false;
  private readonly listeners = new Set<(change: RunWatchChange) => void>();

  /** `cluster`: the target as a SLURM login host, for runs submitted there. */
  constructor(
    readonly ref: RunRef,
    readonly machine: RunMachine,
    private readonly cluster?: SlurmCluster,
  ) {}

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
    const jobId = this.jobId();
    if (!jobId) return;
    await this.checkJob(jobId);
    this.emit([]);
    if (this.watchesJob()) this.scheduleLiveness();
  }

  /**
   * After a resume or relaunch in this run's folder: run.json read again (the launch rewrote it),
   * then followed on. `resumedAt` (seconds): when the resume was asked for; an end written before it
   * is the last run's, not this one's, even when it is read only now (Resume pressed as the stop's
   * last lines arrive, or while the watch still settles that end).
   */
  async followResume(resumedAt: number): Promise<void> {
    this.resumedAt = resumedAt;
    await this.refreshManifest();
    this.follow();
  }

  /** Starts following metrics.jsonl (and the run's logs) from where this watch stopped reading. */
  follow(): void {
    if (this.disposed || this.follower || this.logFolder) return;
    this.vanished = undefined;
    const pid = this.manifest?.pgid;
    if (this.ref.format !== 'tensorboard') {
      this.follower = this.machine.follow(
        this.metricsFile,
        metricsDecoder,
        this.offset,
        {
          batch: (batch) => {
            this.offset = batch.offset;
            for (const e of batch.entries) this.history.apply(e.event);
            this.keepProblems(batch.problems);
            // Stop at the end the run just wrote. (A batch after an older end — a resumed run's first
            // lines — keeps following: its run_start comes after them.)
            if (
              this.history.end &&
              this.history.end.time >= this.resumedAt &&
              batch.entries.some((e) => e.event === this.history.end)
            )
              void this.followToTheEnd();
            // The trainer started while its job was last seen queued: ask SLURM again now, not at the next poll.
            if (this.job && jobWaiting(this.job) && batch.entries.some((e) => e.event.type === 'run_start'))
              void this.refreshJob();
            if (batch.entries.length || batch.problems.length) this.emit(batch.entries);
          },
          connection: (state) => this.setConnection('metrics', state),
        },
        pid,
      );
    }
    this.followLogs();
    this.followPrinted();
    void this.noteCgroup();
    if (this.ref.format !== 'tensorboard') this.scheduleLiveness();
  }

  /**
   * A person's command: what it prints is read for step lines (nanoGPT's `iter N: loss X`, the
   * Trainer's dicts, …; runs/watch/decoders/printed/), with the launch spec's own patterns first. The
   * native runtime's output is not: its metrics.jsonl says everything.
   */
  private followPrinted(): void {
    const decoder = this.ref.format === 'tensorboard' ? undefined : printedDecoderOf(this.manifest);
    if (!decoder) return;
    for (const file of PRINTED_FILES) {
      if (this.printedFollowers.has(file)) continue;
      const from = this.printedOffsets.get(file) ?? 0;
      let first = true;
      const follower = this.machine.follow(
        `${this.ref.runDir}/${file}.log`,
        decoder,
        from,
        {
          batch: (batch) => {
            this.printedOffsets.set(file, batch.offset);
            const backlog = first && from === 0;
            first = false;
            if (!batch.entries.length || !this.printedSteps.takes(file)) return;
            this.printedSteps.apply(
              file,
              batch.entries,
              this.printedTimes(batch.entries, backlog ? batch.offset : undefined),
            );
            this.emit([]);
          },
          connection: () => undefined,
        },
        this.manifest?.pgid,
      );
      this.printedFollowers.set(file, follower);
    }
  }

  /**
   * When each printed step happened. Lines carry no time: those read as they arrive are stamped
   * with the arrival; a first read of output that was already there (the watch began after the
   * run, or the editor reloaded) spreads its lines by their place in the file between the run's
   * start and the time the read reached (now, or the run's end), an estimate the header states.
   */
  private printedTimes(entries: readonly PrintedEntry[], backlogBytes: number | undefined): number[] {
    const now = Date.now() / 1000;
    const endedAt =
      this.history.end?.time ?? (this.manifest && ENDED.has(this.manifest.status) ? this.manifest.updated : undefined);
    const since = this.history.firstStartTime ?? this.manifest?.created;
    const { times, estimated } = printedTimes(entries, backlogBytes, since, Math.min(now, endedAt ?? now));
    if (estimated) this.printedTimesEstimated = true;
    return times;
  }

  /** Some printed steps' times were estimated from their place in the output (printedTimes). */
  printedTimesEstimated = false;

  /** Follows the TensorBoard folder the run logs to (named in run.json, which may come a moment after the run). */
  private followLogs(): void {
    const logs = this.logFolderOptions();
    if (logs && !this.logFolder) {
      this.logFolder = new LogFolderFollower(this.machine, logs.dir, logs.options, this.logProgress, {
        batch: (_file, batch) => {
          // As logged: a NaN or Inf is noted as such (RunHistory.nonFinite), not only drawn as a gap.
          for (const s of batch.entries)
            this.history.applyScalar(s.tag, s.step, s.value, s.wallTime, undefined, { source: 'tensorboard' });
          this.keepProblems(batch.problems);
          if (batch.entries.length || batch.problems.length) this.emit([]);
        },
        connection: (state) => this.setConnection('logs', state),
      });
    }
  }

  /** The TensorBoard folder this run's scalars come from, if any. */
  private logFolderOptions(): { dir: string; options: LogFolderOptions } | undefined {
    if (this.ref.format === 'tensorboard') return { dir: this.ref.runDir, options: { depth: 0 } };
    const dir = this.manifest?.logs?.tensorboard;
    if (!dir) return undefined;
    // A launched command writes where it likes below its folder (runs/<date>_<host>/, version_N/):
    // its own files are those written since it was created.
    const created = this.manifest?.created;
    return {
      dir,
      options: {
        depth: 3,
        ...(created !== undefined ? { since: created - SINCE_SLACK_S } : {}),
        ...(this.manifest?.pgid ? { pid: this.manifest.pgid } : {}),
      },
    };
  }

  /** The event files this watch reads. */
  get logFiles(): string[] {
    return this.logFolder?.files ?? [...this.logProgress.offsets.keys()];
  }

  private keepProblems(problems: RecordProblem[]): void {
    if (!problems.length) return;
    this.problems.push(...problems);
    this.problems.splice(0, Math.max(0, this.problems.length - PROBLEMS_KEPT));
  }

  /** The watch's connection: its metrics.jsonl's, unless its logs' is worse (or it has only logs). */
  private setConnection(which: 'metrics' | 'logs', state: ConnectionState): void {
    if (which === 'metrics') this.metricsConnection = state;
    else this.logConnection = state;
    const rank = (s: ConnectionState) => ({ reconnecting: 3, connecting: 2, live: 1, closed: 0 })[s.state];
    const primary = this.ref.format === 'tensorboard' ? this.logConnection : this.metricsConnection;
    const logs = this.logFolder ? this.logConnection : undefined;
    this.connection = logs && primary.state !== 'closed' && rank(logs) > rank(primary) ? logs : primary;
    this.emit([]);
  }

  status(): RunStatus {
    if (this.job) return jobRunStatus(this.job, this.runFacts());
    const end = this.history.end;
    // run.json rewritten as live after the log's last end is a resume starting.
    // A resume asked for after the end (this window pressed Resume or "Continue training") is one
    // starting, even while run.json is not yet rewritten by the launch.
    const resumedHere = end !== undefined && this.resumedAt > end.time && !this.vanished;
    const resuming =
      end &&
      ((this.manifest &&
        !ENDED.has(this.manifest.status) &&
        (this.manifest.updated ?? 0) > end.time &&
        !this.manifestOfEndedAttempt()) ||
        resumedHere);
    if (end && !resuming) return end.status;
    const m = this.manifest?.status;
    if (resumedHere && (this.manifest?.updated ?? 0) <= this.resumedAt) return 'starting';
    // A start logged after run.json last said "ended" is a resume running (run.json is read every few seconds).
    const startedSince =
      !end && this.history.start !== undefined && this.history.start.time > (this.manifest?.updated ?? Infinity);
    if ((m === 'completed' || m === 'failed' || m === 'stopped') && !startedSince) return m;
    if (this.vanished) return 'failed';
    if (this.history.start) return 'running';
    if (m) return m;
    return 'unknown';
  }

  /**
   * run.json names a process of the attempt whose end the log holds: it is that attempt's owner,
   * writing a poll behind the log (the supervisor turns the runtime's events into run.json, and a
   * step it wrote just after the runtime's run_end must not read as a resume). A resume's run.json
   * names only its own processes (runs/folder/run-folder.ts startingManifest drops the last ones).
   */
  private manifestOfEndedAttempt(): boolean {
    const named = new Set(this.manifest?.pids ?? []);
    return (this.history.start?.world.ranks ?? []).some((r) => r.pid !== undefined && named.has(r.pid));
  }

  /** Why the run ended, in words, when it did not complete. */
  endReason(): string | undefined {
    if (this.stopRequested && this.status() === 'stopped')
      return `stopped with Stop at step ${this.history.lastStep ?? 0}`;
    const fromJob = this.job && jobReason(this.job, jobRunStatus(this.job, this.runFacts()));
    if (fromJob) return fromJob;
    return this.vanished ?? this.history.end?.reason ?? this.manifest?.end_reason;
  }

  isLive(): boolean {
    const s = this.status();
    return s === 'starting' || s === 'running' || s === 'queued';
  }

  async refreshManifest(): Promise<void> {
    try {
      this.manifest = await this.machine.readManifest(this.ref.runDir);
      this.manifestError = undefined;
      if (this.follower && !this.logFolder) this.followLogs();
      // run.json may come a moment after the watch: only then is it known to be a command's run.
      if (this.follower && this.printedFollowers.size === 0) this.followPrinted();
    } catch (e) {
      this.manifestError = (e as Error).message;
    }
  }

  /** Reads what was appended now (local runs; ssh tails deliver by themselves). */
  poke(): void {
    this.follower?.poke();
    this.logFolder?.poke();
    for (const f of this.printedFollowers.values()) f.poke();
  }

  dispose(): void {
    this.disposed = true;
    this.stopFollowing();
    clearTimeout(this.liveness);
    this.listeners.clear();
  }

  /** The run wrote its end: its event files (run.json may name them only now) are read to their end, then let go. */
  private async followToTheEnd(): Promise<void> {
    if (!this.logFolder && this.ref.format !== 'tensorboard') await this.refreshManifest();
    // Resumed while run.json was read: the end is the last run's; its successor's lines come next.
    if ((this.history.end?.time ?? -Infinity) < this.resumedAt) return;
    // Or run.json, rewritten by a launch after that end, says so (a watch made after the resume).
    if (this.isLive()) return;
    this.stopFollowing();
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
    // The run's last printed lines may still be on their way (run_end is written after its output ended).
    for (const printed of this.printedFollowers.values()) {
      if (this.disposed) printed.stop();
      else this.drainThenStop(printed);
    }
    this.printedFollowers.clear();
    // The run's event files may still hold its last records: read them, then let go.
    const logs = this.logFolder;
    this.logFolder = undefined;
    if (logs) {
      if (this.disposed) logs.stop();
      else
        void logs
          .drain(this.machine.target === 'local' ? LOGS_DRAIN_MS.local : LOGS_DRAIN_MS.ssh)
          .finally(() => logs.stop());
    }
  }

  /**
   * Reads a follower's file until nothing more has come for a while (a loaded machine may take
   * seconds to deliver the last lines), then stops it; never longer than the drain's limit.
   */
  private drainThenStop(f: Follower): void {
    const local = this.machine.target === 'local';
    const deadline = Date.now() + (local ? PRINTED_DRAIN_MS.local : PRINTED_DRAIN_MS.ssh);
    let last = -1;
    let stillSince = Date.now();
    const look = () => {
      if (
        this.disposed ||
        Date.now() > deadline ||
        (f.offset === last && Date.now() - stillSince >= PRINTED_QUIET_MS)
      ) {
        f.stop();
        return;
      }
      if (f.offset !== last) stillSince = Date.now();
      last = f.offset;
      f.poke();
      setTimeout(look, 250);
    };
    look();
  }

  private scheduleLiveness(): void {
    clearTimeout(this.liveness);
    const every = this.machine.target === 'local' ? LIVENESS_MS.local : LIVENESS_MS.ssh;
    this.liveness = setTimeout(() => void this.checkLiveness(), every);
  }

  /** The run's SLURM job, when it was submitted to one and the target can be asked. */
  private jobId(): string | undefined {
    return this.cluster ? this.manifest?.slurm?.job_id : undefined;
  }

  /** Whether the run's SLURM job is to be asked about: it has one that may not have ended. */
  private watchesJob(): boolean {
    return !this.disposed && !!this.jobId() && (!this.job || jobActive(this.job));
  }

  private runFacts(): RunFacts {
    const { start, end } = this.history;
    return {
      ...(start ? { startedAt: start.time } : {}),
      ...(end ? { end: { status: end.status, time: end.time } } : {}),
    };
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
      if (!this.follower && this.isLive()) this.follow();
      return;
    }
    // Its last lines may still be unread: read the log to its end, then stop following. A job that
    // ran and ended between two looks was never followed: read what it wrote first. (On the first
    // look, start() follows from the beginning right after.)
    if (this.offset > 0 && !this.follower && !this.disposed) this.follow();
    await this.readToTheEnd();
    if (this.disposed) return;
    this.stopFollowing();
    if (asked && !this.manifest?.slurm?.final_state) {
      await recordJobEnd(this.cluster!.host, this.ref.runDir, job).catch(() => undefined);
      await this.refreshManifest();
    }
  }

  /**
   * Once the job has ended its log grows no more: follows it until everything in it has been read
   * (the follower's offset at the file's size), rather than for a fixed while that a loaded machine
   * or a slow transport outlasts. The drain's limit only bounds a transport that stopped delivering,
   * or a last line left unfinished (the decoder reads whole lines).
   */
  private async readToTheEnd(): Promise<void> {
    const deadline = Date.now() + (this.machine.target === 'local' ? LOGS_DRAIN_MS.local : LOGS_DRAIN_MS.ssh);
    while (this.follower && !this.disposed && Date.now() < deadline) {
      const { size } = await this.machine.readFileFrom(this.metricsFile, 0, 0).catch(() => ({ size: 0 }));
      if (this.offset >= size) return;
      this.follower?.poke();
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /**
   * A run that ended without a run_end crashed, was killed, or was refused before it began: its
   * process group (or, for runs started without one, its pids) is gone, or its launcher marked it
   * ended in run.json. Every run gets this check, whoever started it.
   */
  private async checkLiveness(): Promise<void> {
    if (this.disposed || this.checking || (!this.follower && !this.watchesJob())) return;
    this.checking = true;
    try {
      await this.refreshManifest();
      const jobId = this.jobId();
      if (jobId) {
        await this.checkJob(jobId);
        this.emit([]);
        return;
      }
      await this.noteCgroup();
      if ((this.isLive() && (await this.processesAlive()) === false) || this.endedWithoutRunEnd()) {
        // Its last lines may still be on their way: read, wait a moment, then decide.
        this.follower?.poke();
        await new Promise((r) => setTimeout(r, 1500));
        await this.refreshManifest();
        // A long log still being read may hold the end: only the file's last line tells.
        if (!this.disposed && (this.isLive() || this.endedWithoutRunEnd()) && !(await this.logEndsWithRunEnd())) {
          this.vanished = await this.describeEnd();
          this.stopFollowing();
        }
      }
      this.emit([]);
    } finally {
      this.checking = false;
      if (this.follower || this.watchesJob()) this.scheduleLiveness();
    }
  }

  /** run.json says the run ended, but the log has no run_end for it. */
  private endedWithoutRunEnd(): boolean {
    const m = this.manifest;
    return !!m && ENDED.has(m.status) && !this.history.end && !this.vanished;
  }

  private async logEndsWithRunEnd(): Promise<boolean> {
    const tail = await this.machine.readFile(this.metricsFile, TAIL_BYTES, true).catch(() => Buffer.alloc(0));
    const last = tail.toString('utf8').trimEnd().split('\n').pop() ?? '';
    try {
      const event = JSON.parse(last) as { type?: unknown; time?: unknown };
      if (event.type !== 'run_end') return false;
      // run.json rewritten by a launch (status "starting") after that end: the end is the last
      // run's, and the relaunched trainer died before it wrote a line.
      const m = this.manifest;
      return !(
        m?.status === 'starting' &&
        m.updated !== undefined &&
        typeof event.time === 'number' &&
        event.time < m.updated
      );
    } catch {
      return false;
    }
  }

  private async processesAlive(): Promise<boolean | undefined> {
    const m = this.manifest;
    if (!m) return undefined;
    // A group whose leader is no longer the process the run started as is not the run's, however
    // alive (runs/stop/run-group.ts). Runs from before leader_start was recorded: the group alone.
    if (m.pgid !== undefined && m.leader_start !== undefined) {
      const v = await this.machine.checkRunGroup(runGroupMarkOf(m)!).catch(() => undefined);
      return v === undefined ? undefined : v.verdict === 'ok';
    }
    if (m.pgid !== undefined) return this.machine.isAlive(m.pgid);
    if (m.pids?.length) return this.machine.processesAlive(m.pids, m.host);
    return undefined;
  }

  private async describeEnd(): Promise<string> {
    const m = this.manifest;
    const memory = await this.memoryAtEnd();
    return describeEndWithoutRunEnd({
      ...(m && ENDED.has(m.status) && m.end_reason ? { manifestReason: m.end_reason } : {}),
      ...(m?.pgid !== undefined ? { pgid: m.pgid } : {}),
      ...(this.history.start ? { start: this.history.start } : {}),
      ...(memory ? { memory } : {}),
      ...(await this.stderrOfThisAttempt().then((stderrTail) => (stderrTail ? { stderrTail } : {}))),
    });
  }

  /**
   * The end of stderr.log as this launch wrote it: a resume appends to the file, so what an earlier
   * attempt said (a Stop's messages) is not quoted as this one's last words.
   */
  private async stderrOfThisAttempt(): Promise<string | undefined> {
    const file = `${this.ref.runDir}/stderr.log`;
    const from = this.manifest?.output_from?.stderr ?? 0;
    try {
      const { size } = await this.machine.readFileFrom(file, 0, 0);
      const start = Math.max(from, size - TAIL_BYTES);
      if (start >= size) return undefined;
      return (await this.machine.readFileFrom(file, start, size - start)).data.toString('utf8');
    } catch {
      return undefined;
    }
  }

  /**
   * The run's process group's memory cgroup while it is alive (this machine only): its OOM-kill
   * count then is what the count at the end is compared with.
   */
  private async noteCgroup(): Promise<void> {
    const pgid = this.manifest?.pgid;
    if (this.machine.target !== 'local' || pgid === undefined || this.cgroupAtStart?.pgid === pgid) return;
    const cgroup = await cgroupMemoryOf(pgid);
    if (cgroup && this.manifest?.pgid === pgid) this.cgroupAtStart = { pgid, cgroup };
  }

  /** What the run could hold and held at its end, and whether its cgroup counted an OOM kill meanwhile (this machine only). */
  private async memoryAtEnd(): Promise<MemoryAtEnd | undefined> {
    if (this.machine.target !== 'local') return undefined;
    const before = this.cgroupAtStart?.cgroup;
    const now = before ? await readCgroupMemory(before.dir, before.version) : undefined;
    const rss = [...this.history.residentByRank.values()].reduce((sum, s) => sum + (s.lastValue ?? 0), 0);
    // A cgroup with a limit of its own: its peak is this run's room; without one, the machine's
    // memory is the room and the cgroup's peak (shared with everything else in it) says nothing.
    const limited = now?.limit !== undefined;
    return {
      limit: limited ? now!.limit! : os.totalmem(),
      limitOf: limited ? `its memory cgroup (${now!.dir})` : 'the machine',
      ...(limited && now!.peak !== undefined
        ? { used: now!.peak, usedWhat: "the cgroup's peak was" }
        : rss > 0
          ? { used: rss, usedWhat: 'its ranks last held (resident)' }
          : {}),
      ...(before?.oomKills !== undefined && now?.oomKills !== undefined && now.oomKills > before.oomKills
        ? { oomKill: true }
        : {}),
    };
  }

  private emit(entries: RunLogEntry[]): void {
    for (const l of this.listeners) l({ entries });
  }
}
