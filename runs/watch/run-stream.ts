// Following a watched run's stream: its metrics.jsonl from where the watch stopped reading, with the
// run's other outputs (runs/watch/run-outputs.ts), the problems met in them and the connection state;
// and, once the run wrote its end, reading everything to that end before letting the files go.
import { metricsDecoder } from './decoders/metrics-decoder';
import type { RecordProblem } from './decoders/record-decoder';
import type { ConnectionState, Follower } from '../machines/run-machine';
import { RunOutputs } from './run-outputs';
import { drainLimit, LOGS_DRAIN_MS, type WatchedRun } from './watched-run';

const PROBLEMS_KEPT = 50;

export interface StreamListener {
  /** The watch's connection changed (its metrics.jsonl's, unless its logs' is worse). */
  connection(state: ConnectionState): void;
  /** A batch of metrics.jsonl held a run_start. */
  runStarted(): void;
}

export class RunStream {
  readonly outputs: RunOutputs;
  private follower: Follower | undefined;
  private logConnection: ConnectionState = { state: 'closed' };
  private metricsConnection: ConnectionState = { state: 'closed' };
  private readOffset = 0;
  private runEndOffset: number | undefined;
  private runStartOffset: number | undefined;
  /** Counts the asks to follow: one made while an end was being settled outlives that settling. */
  private followsAsked = 0;

  constructor(
    private readonly run: WatchedRun,
    private readonly problems: RecordProblem[],
    private readonly listener: StreamListener,
  ) {
    this.outputs = new RunOutputs(run, {
      problems: (problems) => this.keepProblems(problems),
      connection: (state) => this.setConnection('logs', state),
    });
  }

  /** Whether any of the run's files is followed now. */
  get following(): boolean {
    return this.follower !== undefined || this.outputs.followingLogs;
  }

  /** Whether metrics.jsonl is followed now. */
  get followingMetrics(): boolean {
    return this.follower !== undefined;
  }

  /** How far metrics.jsonl has been read (bytes). */
  get offset(): number {
    return this.readOffset;
  }

  /** Where the latest run_end read begins in metrics.jsonl (the history's end, while it has one). */
  get endOffset(): number | undefined {
    return this.runEndOffset;
  }

  /** Where the latest run_start read begins in metrics.jsonl. */
  get startOffset(): number | undefined {
    return this.runStartOffset;
  }

  /** Starts following metrics.jsonl (and the run's other outputs) from where this watch stopped reading. */
  follow(): void {
    const { run } = this;
    this.followsAsked++;
    if (run.ref.format !== 'tensorboard') {
      this.follower = run.machine.follow(
        run.metricsFile,
        metricsDecoder,
        this.readOffset,
        {
          batch: (batch) => {
            this.readOffset = batch.offset;
            for (const e of batch.entries) {
              run.history.apply(e.event);
              if (e.event.type === 'run_end') this.runEndOffset = e.offset;
              if (e.event.type === 'run_start') this.runStartOffset = e.offset;
            }
            this.keepProblems(batch.problems);
            // Stop at the end the run just wrote. (A batch after an older end — a resumed run's first
            // lines — keeps following: its run_start comes after them.)
            const end = run.history.end;
            if (end && !run.endBeforeResume() && batch.entries.some((e) => e.event === end)) void this.followToTheEnd();
            if (batch.entries.some((e) => e.event.type === 'run_start')) this.listener.runStarted();
            if (batch.entries.length || batch.problems.length) run.emit(batch.entries);
          },
          connection: (state) => this.setConnection('metrics', state),
        },
        run.manifest()?.pgid,
      );
    }
    this.outputs.followLogs();
    this.outputs.followPrinted();
  }

  /** run.json was read again: it may name a TensorBoard folder, or say the run is a command's, only now. */
  manifestRead(): void {
    if (this.follower && !this.outputs.followingLogs) this.outputs.followLogs();
    // run.json may come a moment after the watch: only then is it known to be a command's run.
    if (this.follower && !this.outputs.followingPrinted) this.outputs.followPrinted();
  }

  /** Reads what was appended now (local runs; ssh tails deliver by themselves). */
  poke(): void {
    this.follower?.poke();
    this.outputs.poke();
  }

  /**
   * Asked to follow while still following: a relaunch in the folder, say, while the last run's end
   * is being settled (followToTheEnd awaiting run.json). That settling then lets nothing go: the
   * relaunch's lines come next, and the next end read settles again.
   */
  followOn(): void {
    this.followsAsked++;
  }

  stop(): void {
    const f = this.follower;
    this.follower = undefined;
    f?.stop();
    this.outputs.stop();
  }

  /**
   * Once the job has ended its log grows no more: follows it until everything in it has been read
   * (the follower's offset at the file's size), rather than for a fixed while that a loaded machine
   * or a slow transport outlasts. The drain's limit only bounds a transport that stopped delivering,
   * or a last line left unfinished (the decoder reads whole lines).
   */
  async readToTheEnd(): Promise<void> {
    const { run } = this;
    const deadline = Date.now() + drainLimit(run.machine, LOGS_DRAIN_MS);
    while (this.follower && !run.disposed() && Date.now() < deadline) {
      const { size } = await run.machine.readFileFrom(run.metricsFile, 0, 0).catch(() => ({ size: 0 }));
      if (this.readOffset >= size) return;
      this.follower?.poke();
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** The run wrote its end: its event files (run.json may name them only now) are read to their end, then let go. */
  private async followToTheEnd(): Promise<void> {
    const { run } = this;
    const asked = this.followsAsked;
    if (!this.outputs.followingLogs && run.ref.format !== 'tensorboard') await run.refreshManifest();
    // Followed again while run.json was read (a relaunch): what that read said may predate it.
    if (this.followsAsked !== asked) return;
    // Resumed while run.json was read: the end is the last run's; its successor's lines come next.
    if (run.endBeforeResume()) return;
    // Or run.json, rewritten by a launch after that end, says so (a watch made after the resume).
    if (run.isLive()) return;
    // The owner's stand-in for an end the runtime never wrote: the liveness check describes how
    // its processes ended (run-liveness.ts), then lets go.
    if (run.history.end?.stand_in === true) return;
    run.stopFollowing();
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
    const primary = this.run.ref.format === 'tensorboard' ? this.logConnection : this.metricsConnection;
    const logs = this.outputs.followingLogs ? this.logConnection : undefined;
    this.listener.connection(logs && primary.state !== 'closed' && rank(logs) > rank(primary) ? logs : primary);
    this.run.emit([]);
  }
}
