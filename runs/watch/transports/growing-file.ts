// Reads a growing file on this machine from a byte offset to its current end through a decoder:
// call read() again (on a file-watching event or a timer) for what was appended since. Every
// complete record comes back once; a partial last record waits in the decoder for its end.
import { open } from 'node:fs/promises';
import type { DecodedBatch, DecoderFactory, LocalRecordReader, RecordDecoder, RecordProblem } from '../decoders/record-decoder';

export class GrowingFileReader<R> implements LocalRecordReader<R> {
  private readonly decoder: RecordDecoder<R>;
  private position: number;

  constructor(readonly path: string, decoder: DecoderFactory<R>, startOffset = 0) {
    this.decoder = decoder(startOffset);
    this.position = startOffset;
  }

  /** Offset just past the last complete record returned. Persist it to resume later. */
  get offset(): number {
    return this.decoder.offset;
  }

  async read(chunkBytes = 1 << 20): Promise<DecodedBatch<R>> {
    const entries: R[] = [];
    const problems: RecordProblem[] = [];
    let file;
    try {
      file = await open(this.path, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { entries, problems, offset: this.offset };
      throw e;
    }
    try {
      const { size } = await file.stat();
      if (size < this.position) {
        problems.push({
          offset: this.position,
          message: `file shrank from ${this.position} to ${size} bytes; it was truncated or replaced, so later reads may miss records`,
          excerpt: '',
        });
        return { entries, problems, offset: this.offset };
      }
      const buf = Buffer.allocUnsafe(chunkBytes);
      for (;;) {
        const { bytesRead } = await file.read(buf, 0, chunkBytes, this.position);
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
