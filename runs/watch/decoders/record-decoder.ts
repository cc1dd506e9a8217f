// What the watch reads is split in two: a transport that delivers the bytes of a growing file (on
// this machine by file watching, on an SSH host by a reconnecting `tail -c +N -F`) and a decoder
// that turns those bytes into records of one format (metrics.jsonl events, TensorBoard records).
// A decoder never throws: what it cannot read it reports as a problem and skips; a record cut
// short by the end of what has arrived waits for the rest. Its `offset` is where the first record
// not yet complete starts, so a transport that reconnects asks for exactly the bytes after the last
// complete record and gives them to a fresh decoder: nothing is lost or read twice, whatever the
// format. A new format is one decoder.

export interface RecordProblem {
  /** Byte offset of the bad record's (or line's) first byte. */
  offset: number;
  /** What is wrong, naming the field where it can. */
  message: string;
  /** The start of the record, for display. */
  excerpt: string;
}

export interface DecodedBatch<R> {
  entries: R[];
  problems: RecordProblem[];
  /** Offset just past the last complete record: where the next read starts. */
  offset: number;
}

export interface RecordDecoder<R> {
  /** Offset just past the last complete record consumed. */
  readonly offset: number;
  /** Consumes the next bytes of the file (consecutive with the previous ones). */
  push(chunk: Uint8Array): DecodedBatch<R>;
}

/** Makes a decoder that starts at a byte offset (0, or the offset of a previous decoder). */
export type DecoderFactory<R> = ((offset: number) => RecordDecoder<R>) & {
  /**
   * A reader of the file on this machine with recovery only this format can do (metrics.jsonl:
   * a file rewritten under the reader is read again without returning any event twice); without
   * one, the file is read through the decoder from the offset. maxBytesPerRead: the most one read()
   * takes (a follower's bound; a reading made once takes the whole file).
   */
  localReader?: (file: string, offset: number, maxBytesPerRead?: number) => LocalRecordReader<R>;
};

export interface LocalRecordReader<R> {
  readonly offset: number;
  /** What was appended since the last read (at most what one read takes: see `behind`). */
  read(): Promise<DecodedBatch<R>>;
  /** The last read stopped before the file's end (a reader that reads a bounded amount): read again. */
  readonly behind?: boolean;
}
