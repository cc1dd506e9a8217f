// Reads a growing file on this machine from a byte offset to its current end through a decoder:
// call read() again (on a file-watching event or a timer) for what was appended since. Every
// complete record comes back once; a partial last record waits in the decoder for its end.
import { LOG_MAX_BYTES, openRegularFile } from '../../../core/protocol/regular-file';
import type {
  DecodedBatch,
  DecoderFactory,
  LocalRecordReader,
  RecordDecoder,
  RecordProblem,
} from '../decoders/record-decoder';

export class GrowingFileReader<R> implements LocalRecordReader<R> {
  private readonly decoder: RecordDecoder<R>;
  private position: number;
  private stoppedShort = false;

  /**
   * maxBytesPerRead: the most one read() takes (the rest is `behind`, for the next one), so that a
   * burst of output is decoded and handed on a bounded piece at a time instead of held whole.
   */
  constructor(
    readonly path: string,
    decoder: DecoderFactory<R>,
    startOffset = 0,
    private readonly maxBytesPerRead = Infinity,
  ) {
    this.decoder = decoder(startOffset);
    this.position = startOffset;
  }

  get behind(): boolean {
    return this.stoppedShort;
  }

  /** Offset just past the last complete record returned. Persist it to resume later. */
  get offset(): number {
    return this.decoder.offset;
  }

  async read(chunkBytes = 1 << 20): Promise<DecodedBatch<R>> {
    const entries: R[] = [];
    const problems: RecordProblem[] = [];
    this.stoppedShort = false;
    // Only a regular file, opened without blocking, and only what it held when opened: a FIFO or
    // a device behind the name is refused (core/protocol/regular-file.ts), never read for ever.
    const opened = await openRegularFile(this.path, LOG_MAX_BYTES);
    if (!opened) return { entries, problems, offset: this.offset };
    const { handle: file, size } = opened;
    try {
      if (size < this.position) {
        problems.push({
          offset: this.position,
          message: `file shrank from ${this.position} to ${size} bytes; it was truncated or replaced, so later reads may miss records`,
          excerpt: '',
        });
        return { entries, problems, offset: this.offset };
      }
      const buf = Buffer.allocUnsafe(chunkBytes);
      const until = Math.min(size, this.position + this.maxBytesPerRead);
      this.stoppedShort = until < size;
      while (this.position < until) {
        const { bytesRead } = await file.read(buf, 0, Math.min(chunkBytes, until - this.position), this.position);
        if (bytesRead === 0) break;
        this.position += bytesRead;
        const batch = this.decoder.push(buf.subarray(0, bytesRead));
        for (const e of batch.entries) entries.push(e);
        problems.push(...batch.problems);
      }
    } finally {
      await file.close();
    }
    return { entries, problems, offset: this.offset };
  }
}
