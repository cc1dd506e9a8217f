// The decoder of metrics.jsonl (core/protocol/run-log-reader.ts's line parser) as the watch's
// transports take it; on this machine the file is read by RunLogReader, which also recovers from a
// file rewritten under it.
import type { DecoderFactory } from './record-decoder';
import { RunLogParser, RunLogReader, type RunLogEntry } from '../../../core/protocol/run-log-reader';

export const metricsDecoder: DecoderFactory<RunLogEntry> = Object.assign((offset: number) => new RunLogParser(offset), {
  localReader: (file: string, offset: number, maxBytesPerRead?: number) =>
    new RunLogReader(file, offset, maxBytesPerRead),
});
