// Reads a run's metrics.jsonl incrementally, from a byte offset, so that a watcher that reattaches
// after a disconnect resumes exactly where it stopped: every complete line is returned once, a
// partial last line waits for its newline, and a bad line is reported, never thrown. A line longer
// than MAX_LINE_BYTES is reported and skipped however the bytes arrive (one rule for any chunk
// size); a file that shrank or was rewritten under the reader is read again from its start, and
// what was returned already is not returned twice. Whatever the file holds, the reader holds a
// bounded window: at most one line's MAX_LINE_BYTES, the bytes one read takes (maxBytesPerRead),
// and PROBLEMS_PER_PUSH problems a chunk, the rest counted in one note (a flood of binary or of
// bad lines made one problem object each, 666 MiB for 128 MiB of binary).
import type { FileHandle } from 'node:fs/promises';
import { LOG_MAX_BYTES, openRegularFile } from './regular-file';
import { checkMetricsEvent, type MetricsEvent } from './metrics';

export interface RunLogEntry {
  /** Byte offset of the line's first byte in the file. */
  offset: number;
  event: MetricsEvent;
}

export interface RunLogProblem {
  /** Byte offset of the bad line's first byte. */
  offset: number;
  /** What is wrong, naming the property where it can. */
  message: string;
  /** The start of the line, for display. */
  excerpt: string;
}

export interface RunLogBatch {
  entries: RunLogEntry[];
  problems: RunLogProblem[];
  /** Offset just past the last complete line: where the next read starts. */
  offset: number;
}

const NEWLINE = 0x0a;
const OPEN_BRACE = 0x7b;
const EXCERPT_CHARS = 120;
/** A line longer than this is reported and skipped instead of being held in memory. */
export const MAX_LINE_BYTES = 8 * 1024 * 1024;
/** Problems reported one by one per chunk pushed; those after them are counted in one note. */
export const PROBLEMS_PER_PUSH = 20;

/**
 * Turns a byte stream into events. Feed it consecutive chunks (from a file, or from `tail` over ssh);
 * it holds back an unterminated last line until its newline arrives. `offset` is always the position
 * of the first byte not yet consumed as part of a complete line.
 */
export class RunLogParser {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skippingLongLine = false;
  private consumed: number;

  constructor(startOffset = 0) {
    this.consumed = startOffset;
  }

  /** Offset where the next complete line starts. */
  get offset(): number {
    return this.consumed;
  }

  /** Bytes received but held back because their line has no newline yet. */
  get pendingLength(): number {
    return this.pendingBytes;
  }

  /** The held-back bytes themselves (none while a runaway line is being skipped). */
  heldBytes(): Buffer {
    return this.skippingLongLine ? Buffer.alloc(0) : Buffer.concat(this.pending);
  }

  push(chunk: Uint8Array): RunLogBatch {
    const entries: RunLogEntry[] = [];
    const problems = new CountedProblems();
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let nl = buf.indexOf(NEWLINE, start); nl !== -1; nl = buf.indexOf(NEWLINE, start)) {
      const piece = buf.subarray(start, nl);
      const lineOffset = this.consumed;
      const lineBytes = this.pendingBytes + piece.length;
      if (this.skippingLongLine) {
        this.skippingLongLine = false;
      } else if (lineBytes > MAX_LINE_BYTES) {
        // Whole in one chunk: the same rule as a line that arrives in pieces.
        problems.push({
          offset: lineOffset,
          message: `line longer than ${MAX_LINE_BYTES} bytes; skipped`,
          excerpt: excerptOf(this.pendingBytes ? this.pending[0] : piece),
        });
      } else {
        const line = this.pendingBytes ? Buffer.concat([...this.pending, piece]) : piece;
        this.parseLine(line, lineOffset, entries, problems);
      }
      this.pending = [];
      this.pendingBytes = 0;
      this.consumed = lineOffset + lineBytes + 1;
      start = nl + 1;
    }
    const rest = buf.subarray(start);
    if (rest.length > 0 && !this.skippingLongLine) {
      this.pending.push(Buffer.from(rest)); // copy: the caller may reuse its buffer
      this.pendingBytes += rest.length;
      if (this.pendingBytes > MAX_LINE_BYTES) {
        problems.push({
          offset: this.consumed,
          message: `line longer than ${MAX_LINE_BYTES} bytes; skipped`,
          excerpt: excerptOf(this.pending[0]),
        });
        this.skippingLongLine = true;
        this.pending = [];
      }
    } else if (rest.length > 0) {
      this.pendingBytes += rest.length;
    }
    return { entries, problems: problems.list(), offset: this.consumed };
  }

  private parseLine(line: Buffer, offset: number, entries: RunLogEntry[], problems: CountedProblems): void {
    // Once the chunk's problems are only counted, a line that cannot be an event (one starts with
    // `{`) is counted without parsing it: a flood of binary or of text costs a byte look a line.
    if (problems.full && cannotBeEvent(line)) {
      problems.count(offset);
      return;
    }
    const text = line.toString('utf8').trim();
    if (text.length === 0) return; // blank lines carry nothing and are not an error
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      problems.push({ offset, message: `not valid JSON: ${(e as Error).message}`, excerpt: excerptOf(line) });
      return;
    }
    const error = checkMetricsEvent(value);
    if (error) {
      problems.push({ offset, message: error, excerpt: excerptOf(line) });
      return;
    }
    entries.push({ offset, event: value as MetricsEvent });
  }
}

/** The problems of one chunk: the first PROBLEMS_PER_PUSH as they are, then one note counting the rest. */
class CountedProblems {
  private readonly kept: RunLogProblem[] = [];
  private more = 0;
  private firstMore = 0;

  /** Further problems are only counted: their messages need not be made. */
  get full(): boolean {
    return this.kept.length >= PROBLEMS_PER_PUSH;
  }

  push(problem: RunLogProblem): void {
    if (this.full) this.count(problem.offset);
    else this.kept.push(problem);
  }

  count(offset: number): void {
    if (this.more++ === 0) this.firstMore = offset;
  }

  list(): RunLogProblem[] {
    if (this.more === 0) return this.kept;
    const lines = `${this.more} more line${this.more === 1 ? '' : 's'}`;
    const message = `${lines} not read (not valid JSON, not an event, or too long), from byte ${this.firstMore}; skipped`;
    return [...this.kept, { offset: this.firstMore, message, excerpt: '' }];
  }
}

/**
 * Reads a metrics.jsonl file from a byte offset to its current end. Call `read()` again (on a file
 * watcher event or a timer) to get what was appended since; nothing is returned twice.
 */
export class RunLogReader {
  private parser: RunLogParser;
  private position: number;
  /** The latest `time` among the events returned, and the lines returned at that time: what a re-read must not return again. */
  private latestTime = -Infinity;
  private linesAtLatestTime = new Set<string>();
  /** While reading a rewritten file again up to this offset, events already returned are dropped. */
  private rereadUntil = -1;

  private stoppedShort = false;

  /**
   * maxBytesPerRead: the most one read() takes (the rest is `behind`, for the next one), so that a
   * follower decodes and hands on a burst a bounded piece at a time; a reading made once takes all.
   */
  constructor(
    readonly path: string,
    startOffset = 0,
    private readonly maxBytesPerRead = Infinity,
  ) {
    this.parser = new RunLogParser(startOffset);
    this.position = startOffset;
  }

  /** Offset just past the last complete line returned. Persist it to resume later. */
  get offset(): number {
    return this.parser.offset;
  }

  /** The last read stopped before the file's end (maxBytesPerRead): read again. */
  get behind(): boolean {
    return this.stoppedShort;
  }

  async read(chunkBytes = 1 << 20): Promise<RunLogBatch> {
    const entries: RunLogEntry[] = [];
    const problems: RunLogProblem[] = [];
    this.stoppedShort = false;
    // A regular file only, opened without blocking (regular-file.ts): a FIFO or a device named
    // metrics.jsonl is refused, and the read stops at what the file held when opened.
    const opened = await openRegularFile(this.path, LOG_MAX_BYTES);
    if (!opened) return { entries, problems, offset: this.offset };
    const { handle: file, size } = opened;
    try {
      const held = this.parser.heldBytes();
      if (held.length > 0 && !held.equals(await bytesAt(file, this.parser.offset, held.length))) {
        // The unterminated last line was cut or replaced (a resumed trainer truncates it): read on from the last complete line.
        this.parser = new RunLogParser(this.parser.offset);
        this.position = this.parser.offset;
      }
      if (size < this.parser.offset || !(await endsLine(file, this.parser.offset))) {
        // Truncated or rewritten: read it all again, returning only what was not returned yet.
        const what =
          size < this.parser.offset
            ? `the file shrank from ${this.parser.offset} to ${size} bytes (truncated or replaced)`
            : 'the file was rewritten under the reader';
        problems.push({
          offset: this.parser.offset,
          message: `${what}; read again from its start, returning only events not returned yet`,
          excerpt: '',
        });
        this.rereadUntil = size;
        this.parser = new RunLogParser(0);
        this.position = 0;
      }
      const buf = Buffer.allocUnsafe(chunkBytes);
      const until = Math.min(size, this.position + this.maxBytesPerRead);
      this.stoppedShort = until < size;
      while (this.position < until) {
        const { bytesRead } = await file.read(buf, 0, Math.min(chunkBytes, until - this.position), this.position);
        if (bytesRead === 0) break;
        this.position += bytesRead;
        const batch = this.parser.push(buf.subarray(0, bytesRead));
        for (const entry of batch.entries) if (this.isNew(entry)) entries.push(entry);
        problems.push(...batch.problems);
      }
      if (this.position >= this.rereadUntil) this.rereadUntil = -1;
    } finally {
      await file.close();
    }
    return { entries, problems, offset: this.offset };
  }

  /**
   * Every event carries the time it was written, and a file only grows in time: after a rewrite,
   * an event is new if it is later than the latest returned, or as late but not among the lines
   * returned at that time. Holding one time and its few lines keeps this O(1) in memory.
   */
  private isNew(entry: RunLogEntry): boolean {
    const time = (entry.event as { time?: unknown }).time;
    if (typeof time !== 'number') return this.rereadUntil < 0;
    const key = JSON.stringify(entry.event);
    if (
      this.rereadUntil >= 0 &&
      (time < this.latestTime || (time === this.latestTime && this.linesAtLatestTime.has(key)))
    )
      return false;
    if (time > this.latestTime) {
      this.latestTime = time;
      this.linesAtLatestTime = new Set();
    }
    if (time === this.latestTime) this.linesAtLatestTime.add(key);
    return true;
  }
}

/** Whether the byte before `offset` is a newline (or offset is 0): the reader's place is still a line start. */
async function endsLine(file: FileHandle, offset: number): Promise<boolean> {
  return offset === 0 || (await bytesAt(file, offset - 1, 1))[0] === NEWLINE;
}

async function bytesAt(file: FileHandle, offset: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await file.read(buf, 0, length, offset);
  return buf.subarray(0, bytesRead);
}

/**
 * Bytes a line may start with that String.trim might remove (a vertical tab, a form feed, and the
 * UTF-8 lead bytes of U+00A0, U+1680, U+2000–U+205F, U+3000 and the BOM): such a line is left to
 * the parser, which trims them.
 */
const MAYBE_TRIMMED = new Set([0x0b, 0x0c, 0xc2, 0xe1, 0xe2, 0xe3, 0xef]);

/** Whether a line is surely not an event without decoding it: its first byte after spaces and tabs can start no `{`. */
function cannotBeEvent(line: Buffer): boolean {
  let i = 0;
  while (i < line.length && (line[i] === 0x20 || line[i] === 0x09 || line[i] === 0x0d)) i++;
  return i < line.length && line[i] !== OPEN_BRACE && !MAYBE_TRIMMED.has(line[i]);
}

function excerptOf(line: Buffer): string {
  const text = line.subarray(0, EXCERPT_CHARS * 4).toString('utf8');
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}
