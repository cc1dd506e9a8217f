// A TensorBoard log folder, followed as its event files appear and grow: the folder is listed now
// and then (the files of a run that has only just started, of a resume, of an evaluation writer),
// and each file is followed through the machine's transport with its own decoder. Files are caught
// up one at a time in name order (TensorBoard names them by creation time), so a resumed run's
// later file replaces the steps it repeats from an earlier one, never the other way round.
import { tensorBoardDecoder, type TensorBoardScalar } from './decoders/tensorboard/tensorboard-decoder';
import type { DecodedBatch, DecoderFactory } from './decoders/record-decoder';
import type { ConnectionState, Follower, ListedFile, RunMachine } from '../machines/run-machine';

export const EVENT_FILE_PREFIX = 'events.out.tfevents.';

export interface LogFolderOptions {
  /** Subfolder levels searched below the folder (0: the folder's own files only). */
  depth: number;
  /** Only files changed at or after this time (seconds since the epoch): a launched run's own files. */
  since?: number;
  /** The run's leading process, for remote tails to end with it. */
  pid?: number;
}

export interface LogFolderHandlers {
  batch(file: string, batch: DecodedBatch<TensorBoardScalar>): void;
  connection(state: ConnectionState): void;
}

/** What a folder's files have delivered so far, kept by the watch across stops and resumes. */
export interface LogFolderProgress {
  offsets: Map<string, number>;
  decoders: Map<string, DecoderFactory<TensorBoardScalar>>;
}

export function newLogFolderProgress(): LogFolderProgress {
  return { offsets: new Map(), decoders: new Map() };
}

/** How often the folder is listed: locally it is cheap; over ssh each listing is a connection. */
const LIST_MS = { local: 1000, ssh: 5000 };
/** A file being caught up that makes no progress this long (a torn last record) lets the next start. */
const STALL_MS = 3000;
/** Files followed at once: the newest ones; older files are read to their end and let go. */
const FOLLOWED = 2;

interface Followed {
  file: string;
  follower: Follower;
  /** The size listed when it was started: caught up once the decoder has passed it. */
  target: number;
  progressAt: number;
  lastOffset: number;
  state: ConnectionState;
}

export class LogFolderFollower {
  private readonly followed: Followed[] = [];
  private readonly queue: ListedFile[] = [];
  private readonly known = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private listing = false;
  private listError: string | undefined;
  private stopped = false;

  constructor(
    private readonly machine: RunMachine,
    readonly dir: string,
    private readonly options: LogFolderOptions,
    private readonly progress: LogFolderProgress,
    private readonly handlers: LogFolderHandlers,
  ) {
    void this.list();
  }

  /** The files followed or read so far. */
  get files(): string[] {
    return [...this.known];
  }

  poke(): void {
    for (const f of this.followed) f.follower.poke();
    void this.list();
  }

  /**
   * Resolves once every event file there is now has been read to its end (the run ended, its
   * writers closed their files), or after `timeoutMs` (a torn last record never completes).
   */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const pause = this.machine.target === 'local' ? 50 : 500;
    while (!this.stopped && Date.now() < deadline) {
      this.poke();
      const files = await this.machine
        .listFiles(this.dir, EVENT_FILE_PREFIX, this.options.depth)
        .catch(() => undefined);
      const since = this.options.since;
      const ours = files?.filter((f) => since === undefined || f.mtime >= since || this.progress.offsets.has(f.path));
      if (ours && ours.every((f) => (this.progress.offsets.get(f.path) ?? 0) >= f.bytes)) return;
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const f of this.followed.splice(0)) f.follower.stop();
    this.handlers.connection({ state: 'closed' });
  }

  private async list(): Promise<void> {
    if (this.stopped || this.listing) return;
    this.listing = true;
    clearTimeout(this.timer);
    try {
      const files = await this.machine.listFiles(this.dir, EVENT_FILE_PREFIX, this.options.depth);
      this.listError = undefined;
      const since = this.options.since;
      for (const f of files) {
        if (this.known.has(f.path) || (since !== undefined && f.mtime < since && !this.progress.offsets.has(f.path)))
          continue;
        this.known.add(f.path);
        this.queue.push(f);
      }
      this.queue.sort((a, b) => a.path.localeCompare(b.path));
    } catch (e) {
      this.listError = (e as Error).message;
    } finally {
      this.listing = false;
    }
    if (this.stopped) return;
    this.advance();
    this.report();
    this.timer = setTimeout(() => void this.list(), this.machine.target === 'local' ? LIST_MS.local : LIST_MS.ssh);
  }

  /** Starts the next queued file once every started one has caught up (or stalled). */
  private advance(): void {
    const now = Date.now();
    for (const f of this.followed) {
      const offset = this.progress.offsets.get(f.file) ?? 0;
      if (offset !== f.lastOffset) {
        f.lastOffset = offset;
        f.progressAt = now;
      }
    }
    const catchingUp = this.followed.some((f) => f.lastOffset < f.target && now - f.progressAt < STALL_MS);
    if (catchingUp || this.queue.length === 0) return;
    const next = this.queue.shift()!;
    this.start(next);
    // Older files than the newest FOLLOWED have been read to their end: stop their transports.
    while (this.followed.length > FOLLOWED && this.followed[0].lastOffset >= this.followed[0].target)
      this.followed.shift()!.follower.stop();
    if (this.queue.length) setTimeout(() => this.advance(), 50);
  }

  private start(file: ListedFile): void {
    let decoder = this.progress.decoders.get(file.path);
    if (!decoder) {
      decoder = tensorBoardDecoder();
      this.progress.decoders.set(file.path, decoder);
    }
    const offset = this.progress.offsets.get(file.path) ?? 0;
    const entry: Followed = {
      file: file.path,
      target: file.bytes,
      progressAt: Date.now(),
      lastOffset: offset,
      state: { state: 'connecting' },
      follower: undefined as unknown as Follower,
    };
    this.followed.push(entry);
    entry.follower = this.machine.follow(
      file.path,
      decoder,
      offset,
      {
        batch: (batch) => {
          this.progress.offsets.set(file.path, batch.offset);
          this.handlers.batch(file.path, batch);
          if (this.queue.length) this.advance();
        },
        connection: (state) => {
          entry.state = state;
          this.report();
        },
      },
      this.options.pid,
    );
  }

  /** One state for the folder: the worst of its files', or of its listing. */
  private report(): void {
    if (this.stopped) return;
    const states = this.followed.map((f) => f.state);
    const reconnecting = states.find((s) => s.state === 'reconnecting');
    if (reconnecting) this.handlers.connection(reconnecting);
    else if (this.listError && this.machine.target !== 'local')
      this.handlers.connection({
        state: 'reconnecting',
        attempt: 1,
        retryAt: Date.now() + LIST_MS.ssh,
        reason: this.listError,
      });
    else if (states.some((s) => s.state === 'connecting')) this.handlers.connection({ state: 'connecting' });
    else this.handlers.connection({ state: 'live' });
  }
}
