// A machine runs live on: this one, or an SSH host. Everything the editor does to a run goes
// through this interface, so watching, stopping and resuming read the same for both. No vscode
// here: these modules are tested directly against real processes and a real sshd.
import type { DecodedBatch, DecoderFactory } from '../watch/decoders/record-decoder';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { RunGroupMark, RunGroupVerdict } from '../stop/run-group';

/** Where a run lives: "local", or the SSH host alias it was launched on. */
export type TargetName = string;
export const LOCAL: TargetName = 'local';

/** The connection of a watch, as the UI shows it. */
export type ConnectionState =
  | { state: 'connecting' }
  | { state: 'live' }
  /** The connection dropped; the next attempt is at `retryAt` (epoch ms). */
  | { state: 'reconnecting'; attempt: number; retryAt: number; reason: string }
  | { state: 'closed' };

export interface FollowHandlers<R> {
  /** Records decoded from the file, in file order; `offset` is where the next read starts. */
  batch(batch: DecodedBatch<R>): void;
  connection(state: ConnectionState): void;
}

/**
 * A transport of a growing file (metrics.jsonl, a TensorBoard event file) through a decoder, that
 * resumes at its last complete record after any interruption.
 */
export interface Follower {
  /** Offset just past the last complete record delivered. */
  readonly offset: number;
  /** Reads what has been appended now, instead of at the next notification or poll. */
  poke(): void;
  stop(): void;
}

export interface ListedFile {
  /** Absolute path on the machine. */
  path: string;
  bytes: number;
  /** Seconds since the Unix epoch. */
  mtime: number;
}

/** How to start a trainer detached on a machine. */
export interface DetachedStart {
  /** The run directory (created if missing). */
  runDir: string;
  /**
   * The starting manifest, handed to the run's owner (FSDP_RUN_MANIFEST), which writes it as
   * run.json with its own pid and process group; the machine adds where this launch's output begins.
   */
  manifest: RunManifest;
  /** Argument vector of the run's owner: the supervisor (python/fsdp_studio/supervise.py) around the run. */
  argv: string[];
  /** Working directory of the trainer. */
  cwd: string;
  env?: Record<string, string>;
}

export interface StartedRun {
  pid: number;
  /** The run's process group: its own session, so it outlives the editor and the connection. */
  pgid: number;
}

/** Signals the editor sends a run's process group (SIGUSR1: the graceful stop mpirun forwards). */
export type StopSignal = 'SIGTERM' | 'SIGUSR1' | 'SIGKILL' | 'SIGINT';

export interface RunMachine {
  readonly target: TargetName;
  /** run.json of a run directory, undefined when absent; throws with a readable message when invalid or unreachable. */
  readManifest(runDir: string): Promise<RunManifest | undefined>;
  /** A file of the run, at most `maxBytes` (diagnostic dumps, logs): its start, or with `tail` its end. */
  readFile(file: string, maxBytes: number, tail?: boolean): Promise<Buffer>;
  /**
   * Up to `maxBytes` of a growing file from byte `offset` (the log tab's follow), with the file's
   * size when read; a file that does not exist yet reads as empty, size 0.
   */
  readFileFrom(file: string, offset: number, maxBytes: number): Promise<{ data: Buffer; size: number }>;
  /** Run directories directly under `runsDir` (those holding a run.json). */
  listRunDirs(runsDir: string): Promise<string[]>;
  /**
   * Follows a growing file from `offset` through a decoder. `pid`: the run's leading process,
   * where known; a remote tail ends with it instead of lingering.
   */
  follow<R>(
    file: string,
    decoder: DecoderFactory<R>,
    offset: number,
    handlers: FollowHandlers<R>,
    pid?: number,
  ): Follower;
  /**
   * Files under `dir` whose names start with `prefix`, in `dir` itself and in subfolders down to
   * `depth` levels, with their sizes and modification times: the event files of a TensorBoard log
   * folder, which appear as a run goes. An absent folder has none.
   */
  listFiles(dir: string, prefix: string, depth: number): Promise<ListedFile[]>;
  start(spec: DetachedStart): Promise<StartedRun>;
  /** Whether any process of the group is alive; undefined when it cannot be told (unreachable). */
  isAlive(pgid: number): Promise<boolean | undefined>;
  /**
   * Whether any of these processes is alive on the machine named `host` (run.json's host): for
   * runs started without a process group of their own (fsdp-train in a terminal). Undefined when
   * this machine is not that host, or it cannot be told.
   */
  processesAlive(pids: number[], host: string): Promise<boolean | undefined>;
  /** Deletes a run folder with everything in it; refuses a folder without a run.json. */
  removeRunDir(runDir: string): Promise<void>;
  /**
   * Whether the process group is still the run's (runs/stop/run-group.ts), asked before any signal:
   * never signal a group this has not answered "ok" for.
   */
  checkRunGroup(mark: RunGroupMark): Promise<RunGroupVerdict>;
  /** Sends a signal to the whole process group. */
  signal(pgid: number, signal: StopSignal): Promise<void>;
}
