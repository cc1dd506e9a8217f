// A person's command's printed output (stdout.log, stderr.log) as metrics: whether a run's output
// is read for step lines, with which patterns, which of its two files the charts take, and when
// each printed step happened. One reader for the editor's watch (run-watch.ts, following the files
// as they grow) and `fsdp-runs show` (cli/runs/read-once.ts, reading them once), so the terminal
// shows the scalars the dashboard charts.
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { RunHistory } from '../../core/runs/run-history';
import {
  metricsPatternsOf,
  printedMetricsDecoder,
  type PrintedEntry,
} from './decoders/printed/printed-metrics-decoder';
import type { DecoderFactory } from './decoders/record-decoder';
import { FORMAT_NAMES } from './decoders/printed/recognisers';

/** Where a person's command prints: both are read for step lines (loggers and progress bars write to stderr). */
export const PRINTED_FILES = ['stdout', 'stderr'] as const;
export type PrintedFile = (typeof PRINTED_FILES)[number];

/**
 * The decoder for a run's printed output, or undefined when its output is not read: only a
 * person's command prints its metrics (the native runtime's metrics.jsonl says everything), and a
 * command that names its TensorBoard folder has its scalars there — its printed lines would race
 * them for the charts (the HF Trainer prints what it logs: whichever came first took the loss
 * chart, and a resumed run's later event file went unread). A pattern the spec gives still asks
 * for them.
 */
export function printedDecoderOf(manifest: RunManifest | undefined): DecoderFactory<PrintedEntry> | undefined {
  if (manifest?.kind !== 'command') return undefined;
  const patterns = metricsPatternsOf(manifest.config);
  if (manifest.logs?.tensorboard && patterns.length === 0) return undefined;
  return printedMetricsDecoder(patterns);
}

/**
 * The printed steps of one run into its history. The charts take one file's lines: the first to
 * give a step (the other may repeat them later, or late).
 */
export class PrintedSteps {
  file: PrintedFile | undefined;

  constructor(private readonly history: RunHistory) {}

  /** Whether steps read from `file` go to the charts: it is the file they take, or none gave a step yet. */
  takes(file: PrintedFile): boolean {
    return this.file === undefined || this.file === file;
  }

  /** Applies `entries` read from `file` at `times` (one per entry); false when the file is not the one the charts take. */
  apply(file: PrintedFile, entries: readonly PrintedEntry[], times: readonly number[]): boolean {
    if (!entries.length || !this.takes(file)) return false;
    this.file = file;
    entries.forEach((e, i) =>
      this.history.applyPrinted(
        e.step,
        e.values,
        times[i],
        { file, format: FORMAT_NAMES[e.format], counted: !!e.counted },
        e.rank,
      ),
    );
    return true;
  }
}

/**
 * When each printed step happened. Lines carry no time: those read as they arrive are stamped with
 * `until` (the arrival); a first read of output that was already there (`backlogBytes`: how far
 * that read got) spreads its lines by their place in the file between the run's start (`since`)
 * and `until` (now, or the run's end) — an estimate, and `estimated` says so.
 */
export function printedTimes(
  entries: readonly PrintedEntry[],
  backlogBytes: number | undefined,
  since: number | undefined,
  until: number,
): { times: number[]; estimated: boolean } {
  if (backlogBytes === undefined || since === undefined || backlogBytes <= 0 || until - since < 2)
    return { times: entries.map(() => until), estimated: false };
  return { times: entries.map((e) => since + ((until - since) * e.offset) / backlogBytes), estimated: true };
}
