// The decoder of metrics.jsonl (core/protocol/run-log-reader.ts's line parser) as the watch's
// transports take it.
import type { DecoderFactory } from './record-decoder';
import { RunLogParser, type RunLogEntry } from './run-log-reader';

export const metricsDecoder: DecoderFactory<RunLogEntry> = (offset) => new RunLogParser(offset);
