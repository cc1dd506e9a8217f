// The dashboard's log tab, host side: the run's stdout.log and stderr.log (what every launcher in
// this project writes into the run folder), shown from their beginning (HEAD_BYTES: how the run
// started) and their last TAIL_BYTES, and followed while the tab is open through the machine's own
// transport (file watching here, a reconnecting tail over ssh) with a decoder that hands on complete
// lines of text. The native runtime's metrics events, which it echoes to stdout as JSON, are shown
// as readable lines (core/runs/readable-events.ts).
import type { LogStream } from '../../core/panels/dashboard-messages';
import { readableLine } from '../../core/runs/readable-events';
import type { DecoderFactory, RecordDecoder } from '../../runs/watch/decoders/record-decoder';
import type { Follower, RunMachine } from '../../runs/machines/run-machine';
import { GrowingFileReader } from '../../runs/watch/transports/growing-file';

/** What the tab shows of a long log's end when it opens; the middle is in the file. */
const TAIL_BYTES = 64 * 1024;
/** …and of its beginning: how the run started (its command, its first lines, its config). */
const HEAD_BYTES = 16 * 1024;
/** A line longer than this without its end is shown in pieces rather than held back. */
const LONGEST_LINE = 64 * 1024;
/**
 * The most read of a log per look: a burst (a 200 MB line, hundreds of MB of binary) is decoded and
 * handed on a piece at a time, and of each piece the tab gets its last TAIL_BYTES only, so neither
 * this process nor the webview holds the burst (issue 40, item 4).
 */
const READ_BYTES = 4 * 1024 * 1024;
const STREAMS: LogStream[] = ['stdout', 'stderr'];

export interface OutputChunk {
  stream: LogStream;
  text: string;
  /** Replaces what is shown (when the tab starts following). */
  reset: boolean;
  /** Said above the text, e.g. that earlier output is in the file. */
  note?: string;
}

export class RunOutputTail {
  private readonly followers: Follower[] = [];
  private generation = 0;

  constructor(
    private readonly machine: RunMachine,
    private readonly runDir: string,
    /** Hands a chunk to the webview; a promise returned holds the stream's next chunk until it settles. */
    private readonly send: (chunk: OutputChunk) => unknown,
  ) {}

  /** Starts (or restarts, from the tail again: the webview was reloaded) following both files. */
  follow(): void {
    this.stop();
    const generation = this.generation;
    for (const stream of STREAMS) void this.start(stream, generation);
  }

  stop(): void {
    this.generation++;
    for (const f of this.followers.splice(0)) f.stop();
  }

  private async start(stream: LogStream, generation: number): Promise<void> {
    const file = `${this.runDir}/${stream}.log`;
    let from: number;
    let head = '';
    try {
      const { size } = await this.machine.readFileFrom(file, 0, 0);
      // A log no longer than head and tail together is shown whole: split, its head could end
      // inside the first line (the runtime's run_start holds the whole config) and lose it.
      from = size <= TAIL_BYTES + HEAD_BYTES ? 0 : size - TAIL_BYTES;
      if (from > 0) {
        // The beginning too (how the run started), to its last whole line; it ends before the tail.
        const start = (await this.machine.readFileFrom(file, 0, HEAD_BYTES)).data;
        head = start.subarray(0, start.lastIndexOf(10) + 1).toString('utf8');
      }
    } catch (e) {
      if (generation === this.generation)
        this.send({ stream, text: '', reset: true, note: `cannot read ${file}: ${(e as Error).message}` });
      return;
    }
    if (generation !== this.generation) return;
    const skipped = from - Buffer.byteLength(head);
    const gap =
      head && skipped > 0 ? `\n… ${formatKiB(skipped)} not shown here: the whole output is in ${file} …\n\n` : '';
    this.send({
      stream,
      text: head ? readable(head) + gap : '',
      reset: true,
      ...(from > 0 && !head ? { note: `… the first ${formatKiB(from)} are in ${file}` } : {}),
    });
    // A tail that starts mid-line starts at the next line (unless the head ends just where it starts).
    let skipPartial = skipped > 0;
    const posts = new MergedPosts(file, (text) =>
      generation === this.generation ? this.send({ stream, text, reset: false }) : undefined,
    );
    this.followers.push(
      this.machine.follow(file, textLines, from, {
        batch: ({ entries }) => {
          if (generation !== this.generation) return;
          let text = entries.join('');
          if (skipPartial && text) {
            text = text.slice(text.indexOf('\n') + 1);
            skipPartial = false;
          }
          posts.add(text);
        },
        connection: () => undefined,
      }),
    );
  }
}

/**
 * A stream's text on its way to the webview, one post at a time: what arrives while a post is in
 * flight (not yet taken by the webview) waits, merged with what comes after it and bounded to its
 * tail, and goes as one post once the previous one settled. Over ssh a burst arrives in 64 KiB
 * reads: a 1 GiB line was some 16,000 posts, each queued for the webview; now it is one post per
 * delivery, each at most the tail the tab shows. A send that returns no promise is not waited for.
 */
export class MergedPosts {
  private pending = '';
  /** Bytes dropped from the front of what is pending: named in the next post. */
  private skipped = 0;
  private inFlight = false;

  constructor(
    private readonly file: string,
    private readonly post: (text: string) => unknown,
  ) {}

  /** Complete lines read (or a piece of an over-long line): posted now, or with the next post. */
  add(text: string): void {
    if (!text) return;
    this.pending += text;
    if (this.pending.length > TAIL_BYTES + HEAD_BYTES) {
      // More than the tab shows when it opens: its end, from a line start, the rest named.
      // A line start in the tail, unless the tail holds none but the last line's end.
      const all = this.pending;
      const lineStart = all.indexOf('\n', all.length - TAIL_BYTES) + 1;
      const from = lineStart > 0 && lineStart < all.length ? lineStart : all.length - TAIL_BYTES;
      this.skipped += Buffer.byteLength(all.slice(0, from));
      this.pending = all.slice(from);
    }
    if (!this.inFlight) this.flush();
  }

  private flush(): void {
    if (!this.pending) return;
    const gap = this.skipped
      ? `\n… ${formatKiB(this.skipped)} not shown here: the whole output is in ${this.file} …\n\n`
      : '';
    const text = gap + this.pending;
    this.pending = '';
    this.skipped = 0;
    const sent = this.post(readable(text));
    if (!isThenable(sent)) return;
    this.inFlight = true;
    const settled = () => {
      this.inFlight = false;
      this.flush();
    };
    sent.then(settled, settled);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}

/** Complete lines with the protocol's JSON events made readable (a line cut by LONGEST_LINE is left as it is). */
function readable(text: string): string {
  return text
    .split('\n')
    .map((line, i, all) => (i < all.length - 1 ? readableLine(line) : line))
    .join('\n');
}

/** A decoder of a text log: each push yields the complete lines that arrived, as one string. */
export const textLines: DecoderFactory<string> = Object.assign(
  (offset: number): RecordDecoder<string> => decodeTextLines(offset),
  {
    localReader: (file: string, offset: number) => new GrowingFileReader(file, textLines, offset, READ_BYTES),
  },
);

function decodeTextLines(offset: number): RecordDecoder<string> {
  let consumed = offset;
  let pending: Buffer = Buffer.alloc(0);
  return {
    get offset() {
      return consumed;
    },
    push(chunk: Uint8Array) {
      const all = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
      let cut = all.lastIndexOf(10) + 1;
      if (cut === 0 && all.length > LONGEST_LINE) {
        // No line end in sight: cut before a UTF-8 continuation byte so no character is split.
        cut = all.length;
        while (cut > 0 && (all[cut - 1] & 0xc0) === 0x80) cut--;
        if (cut > 0 && all[cut - 1] >= 0xc0) cut--;
      }
      pending = all.subarray(cut);
      consumed += cut;
      return { entries: cut ? [all.subarray(0, cut).toString('utf8')] : [], problems: [], offset: consumed };
    },
  };
}

function formatKiB(bytes: number): string {
  return bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}
