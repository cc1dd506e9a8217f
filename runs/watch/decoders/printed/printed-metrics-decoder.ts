// The decoder of a run's printed output (stdout.log, stderr.log) for the watch: complete lines —
// ended by a newline, or by a carriage return as progress bars redraw themselves — go through the
// recognisers (recognisers.ts) and come out as the scalars of one step each. Like every decoder it
// never throws, holds back a line whose end has not arrived, and says where the next read starts.
// It holds at most LONGEST_LINE of a line and a chunk: a longer line (a 1 GiB line, binary with no
// newline) is dropped as it arrives, and each push says in one note how many it dropped.
import type { DecoderFactory, RecordDecoder } from '../record-decoder';
import { PrintedMetricsReader, type PrintedStep } from './recognisers';

export interface PrintedEntry extends PrintedStep {
  /** Byte offset of the line's first byte. */
  offset: number;
}

/** A line longer than this without its end is dropped: no step line is that long. */
const LONGEST_LINE = 64 * 1024;
const LF = 0x0a;
const CR = 0x0d;
const TAB = 0x09;
const BACKSPACE = 0x08;
const ESC = 0x1b;
const DEL = 0x7f;

/** A decoder factory reading with a person's own patterns first (the launch spec's metrics.pattern). */
export function printedMetricsDecoder(patterns: readonly string[] = []): DecoderFactory<PrintedEntry> {
  return (offset: number): RecordDecoder<PrintedEntry> => {
    const reader = new PrintedMetricsReader(patterns);
    let consumed = offset;
    let pending: Buffer = Buffer.alloc(0);
    let dropping = false;
    return {
      get offset() {
        return consumed;
      },
      push(chunk: Uint8Array) {
        const entries: PrintedEntry[] = [];
        let dropped = 0;
        let firstDropped = 0;
        const all = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
        let start = 0;
        // A line with a control byte no terminal text has (a NUL, …; tabs, backspaces and colour
        // escapes are text) is binary, never a step line: not decoded nor matched, which makes a
        // gigabyte of binary cheap to pass over.
        let binary = false;
        for (let i = 0; i < all.length; i++) {
          const b = all[i];
          if (b >= 0x20 && b !== DEL) continue;
          if (b !== LF && b !== CR) {
            if (b !== TAB && b !== BACKSPACE && b !== ESC) binary = true;
            continue;
          }
          if (!dropping && i - start > LONGEST_LINE) {
            // Whole in this chunk: the same rule as a line that arrives in pieces.
            if (dropped++ === 0) firstDropped = consumed + start;
          } else if (!dropping && !binary && i > start) {
            const step = reader.read(all.subarray(start, i).toString('utf8'));
            if (step) entries.push({ ...step, offset: consumed + start });
          }
          binary = false;
          dropping = false;
          start = i + 1;
        }
        consumed += start;
        pending = Buffer.from(all.subarray(start));
        if (pending.length > LONGEST_LINE) {
          if (!dropping && dropped++ === 0) firstDropped = consumed;
          consumed += pending.length;
          pending = Buffer.alloc(0);
          dropping = true;
        }
        const problems = dropped
          ? [
              {
                offset: firstDropped,
                message: `${dropped} line${dropped === 1 ? '' : 's'} longer than ${LONGEST_LINE / 1024} KiB not read for step lines, from byte ${firstDropped}`,
                excerpt: '',
              },
            ]
          : [];
        return { entries, problems, offset: consumed };
      },
    };
  };
}

/** The launch spec's metrics.pattern (one or a list), as a command run's run.json keeps it in its config. */
export function metricsPatternsOf(config: unknown): string[] {
  const metrics = (config as { metrics?: { pattern?: unknown } } | undefined)?.metrics;
  const p = metrics?.pattern;
  if (typeof p === 'string') return [p];
  return Array.isArray(p) ? p.filter((x): x is string => typeof x === 'string') : [];
}
