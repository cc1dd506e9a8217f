// The transport of a growing file on this machine: its folder watched (the file may not exist yet,
// or be replaced), with a slow poll as a safety net since file watching can miss events on some
// file systems; appended bytes go through the format's decoder from the offset given.
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { GrowingFileReader } from './growing-file';
import type { DecoderFactory, LocalRecordReader } from '../decoders/record-decoder';
import type { Follower, FollowHandlers } from '../../machines/run-machine';

/** Poll interval when file watching says nothing; watching normally reports within milliseconds. */
const POLL_MS = 1000;
/**
 * The most one look reads (it reads on at once while behind): a burst of output — a run printing a
 * gigabyte — is decoded and handed on 4 MiB at a time instead of in one batch of the whole file.
 */
export const READ_BYTES = 4 * 1024 * 1024;

export class LocalFollower<R> implements Follower {
  private readonly reader: LocalRecordReader<R>;
  private watcher: FSWatcher | undefined;
  private readonly timer: NodeJS.Timeout;
  private reading = false;
  private again = false;
  private stopped = false;
  private delivered: number;

  constructor(
    private readonly file: string,
    decoder: DecoderFactory<R>,
    offset: number,
    private readonly handlers: FollowHandlers<R>,
  ) {
    this.reader =
      decoder.localReader?.(file, offset, READ_BYTES) ?? new GrowingFileReader(file, decoder, offset, READ_BYTES);
    this.delivered = offset;
    this.timer = setInterval(() => this.poke(), POLL_MS);
    handlers.connection({ state: 'live' });
    this.poke();
  }

  get offset(): number {
    return this.reader.offset;
  }

  poke(): void {
    if (this.stopped) return;
    this.ensureWatcher();
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.reader
      .read()
      .then((batch) => {
        // An advance without records (records the decoder skips) is delivered too: the offset moved.
        if (!this.stopped && (batch.entries.length || batch.problems.length || batch.offset !== this.delivered)) {
          this.delivered = batch.offset;
          this.handlers.batch(batch);
        }
      })
      .catch((e: Error) => {
        if (!this.stopped)
          this.handlers.batch({
            entries: [],
            problems: [{ offset: this.offset, message: `cannot read ${this.file}: ${e.message}`, excerpt: '' }],
            offset: this.offset,
          });
      })
      .finally(() => {
        this.reading = false;
        // A reader that takes a bounded amount per read and stopped short reads on at once.
        if (this.again || this.reader.behind) {
          this.again = false;
          this.poke();
        }
      });
  }

  /** Resolves once what is in the file now has been read and delivered. */
  async drain(): Promise<void> {
    while (this.reading && !this.stopped) await new Promise((r) => setTimeout(r, 10));
    this.poke();
    while (this.reading && !this.stopped) await new Promise((r) => setTimeout(r, 10));
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.watcher?.close();
    this.handlers.connection({ state: 'closed' });
  }

  /** Watches the folder, not the file: the file may not exist yet, or be replaced. */
  private ensureWatcher(): void {
    if (this.watcher) return;
    try {
      this.watcher = watch(path.dirname(this.file), (_event, name) => {
        if (!name || name === path.basename(this.file)) this.poke();
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined; // the poll keeps going and re-creates it
      });
    } catch {
      /* folder not there yet: the poll retries */
    }
  }
}
