// The dashboard's log tab, host side: the run's stdout.log and stderr.log (what every launcher in
// this project writes into the run folder), shown from their last TAIL_BYTES and followed while the
// tab is open — by polling the file's size, locally every second, over ssh every few seconds.
import { StringDecoder } from 'node:string_decoder';
import type { LogStream } from '../../core/panels/dashboard-messages';
import type { RunMachine } from '../runs/run-machine';

/** What the tab shows of a long log when it opens; the rest is in the file. */
const TAIL_BYTES = 64 * 1024;
/** Most read per poll, so a burst of output arrives in pieces instead of one huge message. */
const CHUNK_BYTES = 256 * 1024;
const POLL_MS = { local: 1000, ssh: 3000 };
const STREAMS: LogStream[] = ['stdout', 'stderr'];

export interface OutputChunk {
  stream: LogStream;
  text: string;
  /** Replaces what is shown (the first read, or the file was truncated or replaced). */
  reset: boolean;
  /** Said above the text, e.g. that earlier output is in the file. */
  note?: string;
}

interface StreamState {
  offset: number;
  decoder: StringDecoder;
  started: boolean;
}

export class RunOutputTail {
  private readonly state = new Map<LogStream, StreamState>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private stopped = true;

  constructor(private readonly machine: RunMachine, private readonly runDir: string, private readonly send: (chunk: OutputChunk) => void) {}

  /** Starts (or restarts, from the tail again: the webview was reloaded) following both files. */
  follow(): void {
    this.stop();
    this.stopped = false;
    this.state.clear();
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async poll(): Promise<void> {
    if (this.stopped || this.reading) return;
    this.reading = true;
    try {
      for (const stream of STREAMS) await this.read(stream);
    } finally {
      this.reading = false;
      if (!this.stopped) this.timer = setTimeout(() => void this.poll(), this.machine.target === 'local' ? POLL_MS.local : POLL_MS.ssh);
    }
  }

  private async read(stream: LogStream): Promise<void> {
    const file = `${this.runDir}/${stream}.log`;
    let s = this.state.get(stream);
    try {
      if (!s) {
        const { size } = await this.machine.readFileFrom(file, 0, 0);
        s = { offset: Math.max(0, size - TAIL_BYTES), decoder: new StringDecoder('utf8'), started: false };
        this.state.set(stream, s);
      }
      let { data, size } = await this.machine.readFileFrom(file, s.offset, CHUNK_BYTES);
      let reset = !s.started;
      let note = s.offset > 0 && !s.started ? `… the first ${formatKiB(s.offset)} are in ${file}` : undefined;
      if (size < s.offset) {
        // Truncated or replaced (a new run in the same folder): start over from its beginning.
        s.offset = 0;
        s.decoder = new StringDecoder('utf8');
        ({ data, size } = await this.machine.readFileFrom(file, 0, CHUNK_BYTES));
        reset = true;
        note = undefined;
      }
      if (!data.length && !reset) return;
      s.offset += data.length;
      let text = s.decoder.write(data);
      // A tail that starts mid-line starts at the next line.
      if (!s.started && note) text = text.slice(text.indexOf('\n') + 1);
      s.started = true;
      this.send({ stream, text, reset, ...(note ? { note } : {}) });
    } catch (e) {
      if (!s?.started) this.send({ stream, text: '', reset: true, note: `cannot read ${file}: ${(e as Error).message}` });
    }
  }
}

function formatKiB(bytes: number): string {
  return bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}
