// A watched run's files besides metrics.jsonl: the TensorBoard folder it logs to (or a TensorBoard
// log folder attached as a run) and, for a person's command, the step lines it prints to stdout.log
// and stderr.log; each folded into the run's history, and drained of its last records at the end.
import type { RecordProblem } from './decoders/record-decoder';
import type { PrintedEntry } from './decoders/printed/printed-metrics-decoder';
import { PRINTED_FILES, printedDecoderOf, printedTimes, PrintedSteps, type PrintedFile } from './printed-output';
import { LogFolderFollower, newLogFolderProgress, type LogFolderOptions } from './log-folder-follower';
import type { ConnectionState, Follower } from '../machines/run-machine';
import { drainLimit, ENDED, LOGS_DRAIN_MS, type WatchedRun } from './watched-run';

/** After a run's end, its stdout and stderr are read until they are quiet this long, for at most PRINTED_DRAIN_MS. */
const PRINTED_QUIET_MS = 3000;
const PRINTED_DRAIN_MS = { local: 20_000, ssh: 30_000 };
/** A launched command's event files are those changed from a little before it was created. */
const SINCE_SLACK_S = 60;

export interface OutputsListener {
  problems(problems: RecordProblem[]): void;
  connection(state: ConnectionState): void;
}

export class RunOutputs {
  private logFolder: LogFolderFollower | undefined;
  private readonly logProgress = newLogFolderProgress();
  /** The run's stdout.log and stderr.log read for printed step lines (a person's command), and where each read got to. */
  private readonly printedFollowers = new Map<PrintedFile, Follower>();
  private readonly printedOffsets = new Map<PrintedFile, number>();
  /** The printed steps into the history, from the file the charts take (printed-output.ts). */
  private readonly printedSteps: PrintedSteps;
  /** Some printed steps' times were estimated from their place in the output (printedTimes). */
  printedTimesEstimated = false;

  constructor(
    private readonly run: WatchedRun,
    private readonly listener: OutputsListener,
  ) {
    this.printedSteps = new PrintedSteps(run.history);
  }

  /** Whether the run's TensorBoard folder is followed now. */
  get followingLogs(): boolean {
    return this.logFolder !== undefined;
  }

  /** Whether stdout.log and stderr.log are followed now. */
  get followingPrinted(): boolean {
    return this.printedFollowers.size > 0;
  }

  /** The event files this watch reads. */
  get logFiles(): string[] {
    return this.logFolder?.files ?? [...this.logProgress.offsets.keys()];
  }

  /**
   * A person's command: what it prints is read for step lines (nanoGPT's `iter N: loss X`, the
   * Trainer's dicts, …; runs/watch/decoders/printed/), with the launch spec's own patterns first. The
   * native runtime's output is not: its metrics.jsonl says everything.
   */
  followPrinted(): void {
    const { ref, machine } = this.run;
    const decoder = ref.format === 'tensorboard' ? undefined : printedDecoderOf(this.run.manifest());
    if (!decoder) return;
    for (const file of PRINTED_FILES) {
      if (this.printedFollowers.has(file)) continue;
      const from = this.printedOffsets.get(file) ?? 0;
      let first = true;
      const follower = machine.follow(
        `${ref.runDir}/${file}.log`,
        decoder,
        from,
        {
          batch: (batch) => {
            this.printedOffsets.set(file, batch.offset);
            // A line too long to be a step line was dropped: said, as an unreadable line of the file.
            this.listener.problems(batch.problems.map((p) => ({ ...p, message: `${file}.log: ${p.message}` })));
            const backlog = first && from === 0;
            first = false;
            if (!batch.entries.length || !this.printedSteps.takes(file)) return;
            this.printedSteps.apply(
              file,
              batch.entries,
              this.printedTimes(batch.entries, backlog ? batch.offset : undefined),
            );
            this.run.emit([]);
          },
          connection: () => undefined,
        },
        this.run.manifest()?.pgid,
      );
      this.printedFollowers.set(file, follower);
    }
  }

  /** Follows the TensorBoard folder the run logs to (named in run.json, which may come a moment after the run). */
  followLogs(): void {
    const logs = this.logFolderOptions();
    if (logs && !this.logFolder) {
      this.logFolder = new LogFolderFollower(this.run.machine, logs.dir, logs.options, this.logProgress, {
        batch: (_file, batch) => {
          // As logged: a NaN or Inf is noted as such (RunHistory.nonFinite), not only drawn as a gap.
          for (const s of batch.entries)
            this.run.history.applyScalar(s.tag, s.step, s.value, s.wallTime, undefined, { source: 'tensorboard' });
          this.listener.problems(batch.problems);
          if (batch.entries.length || batch.problems.length) this.run.emit([]);
        },
        connection: (state) => this.listener.connection(state),
      });
    }
  }

  /** Reads what was appended now (local runs; ssh tails deliver by themselves). */
  poke(): void {
    this.logFolder?.poke();
    for (const f of this.printedFollowers.values()) f.poke();
  }

  /** Lets the files go: at once when the watch is disposed, else once their last lines are read. */
  stop(): void {
    const disposed = this.run.disposed();
    // The run's last printed lines may still be on their way (run_end is written after its output ended).
    for (const printed of this.printedFollowers.values()) {
      if (disposed) printed.stop();
      else this.drainThenStop(printed);
    }
    this.printedFollowers.clear();
    // The run's event files may still hold its last records: read them, then let go.
    const logs = this.logFolder;
    this.logFolder = undefined;
    if (logs) {
      if (disposed) logs.stop();
      else void logs.drain(drainLimit(this.run.machine, LOGS_DRAIN_MS)).finally(() => logs.stop());
    }
  }

  /**
   * When each printed step happened. Lines carry no time: those read as they arrive are stamped
   * with the arrival; a first read of output that was already there (the watch began after the
   * run, or the editor reloaded) spreads its lines by their place in the file between the run's
   * start and the time the read reached (now, or the run's end), an estimate the header states.
   */
  private printedTimes(entries: readonly PrintedEntry[], backlogBytes: number | undefined): number[] {
    const { history } = this.run;
    const manifest = this.run.manifest();
    const now = Date.now() / 1000;
    const endedAt = history.end?.time ?? (manifest && ENDED.has(manifest.status) ? manifest.updated : undefined);
    const since = history.firstStartTime ?? manifest?.created;
    const { times, estimated } = printedTimes(entries, backlogBytes, since, Math.min(now, endedAt ?? now));
    if (estimated) this.printedTimesEstimated = true;
    return times;
  }

  /** The TensorBoard folder this run's scalars come from, if any. */
  private logFolderOptions(): { dir: string; options: LogFolderOptions } | undefined {
    const { ref } = this.run;
    if (ref.format === 'tensorboard') return { dir: ref.runDir, options: { depth: 0 } };
    const manifest = this.run.manifest();
    const dir = manifest?.logs?.tensorboard;
    if (!dir) return undefined;
    // A launched command writes where it likes below its folder (runs/<date>_<host>/, version_N/):
    // its own files are those written since it was created.
    const created = manifest?.created;
    return {
      dir,
      options: {
        depth: 3,
        ...(created !== undefined ? { since: created - SINCE_SLACK_S } : {}),
        ...(manifest?.pgid ? { pid: manifest.pgid } : {}),
      },
    };
  }

  /**
   * Reads a follower's file until nothing more has come for a while (a loaded machine may take
   * seconds to deliver the last lines), then stops it; never longer than the drain's limit.
   */
  private drainThenStop(f: Follower): void {
    const deadline = Date.now() + drainLimit(this.run.machine, PRINTED_DRAIN_MS);
    let last = -1;
    let stillSince = Date.now();
    const look = () => {
      if (
        this.run.disposed() ||
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
}
