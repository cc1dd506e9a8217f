// The transport of a growing file on an SSH host: `tail -c +OFFSET -F` over the user's ssh. A
// reconnect asks for exactly the bytes after the last complete record its decoder has, and hands
// them to a fresh decoder, so nothing is lost or read twice however often the connection drops.
// Reconnection backs off and says when it retries.
import type { ChildProcess } from 'node:child_process';
import type { DecoderFactory, RecordDecoder } from '../decoders/record-decoder';
import type { Follower, FollowHandlers } from '../../machines/run-machine';
import { spawnSsh, SSH_CONNECTION_FAILED, type SshSettings } from '../../machines/ssh';

/** Delays between reconnection attempts, in ms; the last repeats. */
export const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 15000, 30000];
/** A connection that stayed up this long (or delivered data) resets the backoff. */
const STABLE_MS = 5000;
/** Printed by the remote side once it runs: the connection is up even before any data. */
const READY = 'fsdp-studio-tail-ready';

export interface SshFollowOptions {
  /** The run's leading process: a tail orphaned by a dropped connection ends with it instead of lingering. */
  pid?: number;
  /** Compress the stream (text formats): an order of magnitude less to send. */
  compress?: boolean;
}

export class SshFollower<R> implements Follower {
  private decoder: RecordDecoder<R>;
  private child: ChildProcess | undefined;
  private retry: NodeJS.Timeout | undefined;
  private attempt = 0;
  private stopped = false;

  constructor(
    private readonly host: string,
    private readonly file: string,
    private readonly decoderAt: DecoderFactory<R>,
    offset: number,
    private readonly handlers: FollowHandlers<R>,
    private readonly settings: () => SshSettings,
    private readonly options: SshFollowOptions = {},
  ) {
    this.decoder = decoderAt(offset);
    this.connect();
  }

  get offset(): number {
    return this.decoder.offset;
  }

  /** tail delivers appended bytes as they come; there is nothing to read early. */
  poke(): void {}

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.child?.kill('SIGTERM');
    this.handlers.connection({ state: 'closed' });
  }

  private connect(): void {
    this.handlers.connection({ state: 'connecting' });
    // A fresh decoder at the last complete record: a partial record from the dropped connection
    // is read again whole, never glued to what the new connection sends.
    this.decoder = this.decoderAt(this.decoder.offset);
    const decoder = this.decoder;
    const startedAt = Date.now();
    let stable = false;
    let stderr = '';
    let child: ChildProcess;
    try {
      child = spawnSsh(
        this.host,
        // Not a regular file (a FIFO, a device behind a link): said, and tried again later.
        [
          { raw: 'if test -e' },
          { path: this.file },
          { raw: '&& ! test -f' },
          { path: this.file },
          { raw: '; then echo "not a regular file (a FIFO, a device or a folder): not read" >&2; exit 4; fi;' },
          { raw: `echo ${READY} >&2; exec tail -c` },
          `+${decoder.offset + 1}`,
          '-F',
          ...(this.options.pid ? [`--pid=${this.options.pid}`] : []),
          '--',
          { path: this.file },
        ],
        this.settings(),
        this.options.compress === false ? [] : ['-o', 'Compression=yes'],
      );
    } catch (e) {
      this.scheduleReconnect((e as Error).message);
      return;
    }
    this.child = child;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (this.stopped || decoder !== this.decoder) return;
      stable = true;
      const before = decoder.offset;
      const batch = decoder.push(chunk);
      // An advance without records (records the decoder skips) is delivered too: the offset moved.
      if (batch.entries.length || batch.problems.length || batch.offset !== before) this.handlers.batch(batch);
    });
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes(READY)) {
        stderr = stderr.replace(`${READY}\n`, '');
        // Not once stopped: a stopped follower's ssh, killed, still hands over the marker it had
        // buffered, and a watch that had let its files go (the run's end read) said "live" again
        // with no connection left (watch-runs.test.ts, cut connections: a cut that found nothing).
        if (!this.stopped && child === this.child) this.handlers.connection({ state: 'live' });
      }
      if (stderr.length > 8000) stderr = stderr.slice(-4000);
    });
    child.once('error', (e) => (stderr += e.message));
    child.once('close', (code) => {
      if (this.child === child) this.child = undefined;
      if (this.stopped) return;
      if (stable || Date.now() - startedAt > STABLE_MS) this.attempt = 0;
      const why =
        lastLine(stderr) || (code === SSH_CONNECTION_FAILED ? 'connection closed' : `tail exited with code ${code}`);
      this.scheduleReconnect(why);
    });
  }

  private scheduleReconnect(reason: string): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt, RECONNECT_DELAYS_MS.length - 1)];
    this.attempt++;
    this.handlers.connection({ state: 'reconnecting', attempt: this.attempt, retryAt: Date.now() + delay, reason });
    this.retry = setTimeout(() => {
      if (!this.stopped) this.connect();
    }, delay);
  }
}

function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => !l.includes('has become inaccessible') && !l.includes('has appeared'))
      .pop()
      ?.trim() ?? ''
  );
}
