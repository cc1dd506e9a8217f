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
    private readonly send: (chunk: OutputChunk) => void,
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
    this.followers.push(
      this.machine.follow(file, textLines, from, {
        batch: ({ entries }) => {
          if (generation !== this.generation) return;
          let text = entries.join('');
          if (skipPartial && text) {
            text = text.slice(text.indexOf('\n') + 1);
            skipPartial = false;
          }
          if (text.length > TAIL_BYTES + HEAD_BYTES) {
            // More than the tab shows when it opens arrived at once: its end, from a line start, the rest named.
            // A line start in the tail, unless the tail holds none but the last line's end.
            const lineStart = text.indexOf('\n', text.length - TAIL_BYTES) + 1;
            const from = lineStart > 0 && lineStart < text.length ? lineStart : text.length - TAIL_BYTES;
            text = `\n… ${formatKiB(Buffer.byteLength(text.slice(0, from)))} not shown here: the whole output is in ${file} …\n\n${text.slice(from)}`;
          }
          if (text) this.send({ stream, text: readable(text), reset: false });
        },
        connection: () => undefined,
      }),
    );
  }
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
