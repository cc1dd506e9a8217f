// A run read once, from its start to what is there now, through the readers the editor's watch
// uses: a run folder (metrics.jsonl, the TensorBoard folder its run.json names, and a command's
// printed output in stdout.log / stderr.log, read as runs/watch/printed-output.ts says) or a
// TensorBoard log folder (its event files), on this machine or on an SSH host.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { GrowingFileReader } from '../../runs/watch/transports/growing-file';
import { metricsDecoder } from '../../runs/watch/decoders/metrics-decoder';
import type { DecodedBatch, DecoderFactory } from '../../runs/watch/decoders/record-decoder';
import { RefusedFile } from '../../core/protocol/regular-file';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { tensorBoardDecoder } from '../../runs/watch/decoders/tensorboard/tensorboard-decoder';
import { RunHistory } from '../../core/runs/run-history';
import { EVENT_FILE_PREFIX } from '../../runs/watch/log-folder-follower';
import { PRINTED_FILES, printedDecoderOf, printedTimes, PrintedSteps } from '../../runs/watch/printed-output';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';

export interface ReadProblem {
  file: string;
  offset: number;
  message: string;
}

export interface RunRead {
  kind: 'run' | 'tensorboard';
  manifest?: RunManifest;
  history: RunHistory;
  files: string[];
  problems: ReadProblem[];
  /** Where the latest run_end and run_start begin in metrics.jsonl (bytes): whose they are is told by their place. */
  endOffset?: number;
  startOffset?: number;
}

/** A launched command's event files are those changed from a little before it was created (as the watch reads them). */
const SINCE_SLACK_S = 60;

export async function readRunOnce(machine: RunMachine, dir: string): Promise<RunRead> {
  const history = new RunHistory();
  const problems: ReadProblem[] = [];
  const files: string[] = [];
  let endOffset: number | undefined;
  let startOffset: number | undefined;
  const join = (a: string, b: string) =>
    machine instanceof LocalMachine ? path.join(a, b) : `${a.replace(/\/+$/, '')}/${b}`;
  const manifest = await machine.readManifest(dir).catch((e: Error) => {
    problems.push({ file: join(dir, 'run.json'), offset: 0, message: e.message });
    return undefined;
  });
  const metrics = join(dir, 'metrics.jsonl');
  const ownFiles = await machine.listFiles(dir, 'metrics.jsonl', 0);
  const eventFiles = await machine.listFiles(dir, EVENT_FILE_PREFIX, 0);
  if (!manifest && ownFiles.length === 0 && eventFiles.length === 0) {
    throw new Error(
      `${dir}: no run here (no run.json, metrics.jsonl or TensorBoard event files ${EVENT_FILE_PREFIX}*)`,
    );
  }
  if (manifest || ownFiles.length) {
    files.push(metrics);
    const batch = await readAll(machine, metrics, metricsDecoder);
    for (const e of batch.entries) {
      history.apply(e.event);
      if (e.event.type === 'run_end') endOffset = e.offset;
      if (e.event.type === 'run_start') startOffset = e.offset;
    }
    problems.push(...batch.problems.map((p) => ({ file: metrics, ...p })));
  }
  const tbDir = manifest?.logs?.tensorboard ?? (!manifest && !ownFiles.length ? dir : undefined);
  if (tbDir) {
    const since = manifest ? manifest.created - SINCE_SLACK_S : undefined;
    const listed = manifest ? await machine.listFiles(tbDir, EVENT_FILE_PREFIX, 3) : eventFiles;
    for (const f of listed.filter((l) => since === undefined || l.mtime >= since)) {
      files.push(f.path);
      const batch = await readAll(machine, f.path, tensorBoardDecoder());
      for (const s of batch.entries)
        history.applyScalar(s.tag, s.step, s.value, s.wallTime, undefined, { source: 'tensorboard' });
      problems.push(...batch.problems.map((p) => ({ file: f.path, ...p })));
    }
  }
  const printed = printedDecoderOf(manifest);
  if (manifest && printed) {
    // What the dashboard charts of a command that only prints: its step lines, timed as the watch
    // times output it finds already there (spread between the run's start and its last update).
    const steps = new PrintedSteps(history);
    const since = history.firstStartTime ?? manifest.created;
    const until = history.end?.time ?? manifest.updated ?? Date.now() / 1000;
    for (const name of PRINTED_FILES) {
      const listed = await machine.listFiles(dir, `${name}.log`, 0);
      const file = listed.find((l) => path.posix.basename(l.path) === `${name}.log`);
      if (!file) continue;
      files.push(file.path);
      // A last line without its end is the output of a command still printing, not a problem.
      const batch = await readAll(machine, file.path, printed, false);
      steps.apply(name, batch.entries, printedTimes(batch.entries, batch.offset, since, until).times);
      problems.push(...batch.problems.map((p) => ({ file: file.path, ...p })));
    }
  }
  return {
    kind: manifest || ownFiles.length ? 'run' : 'tensorboard',
    ...(manifest ? { manifest } : {}),
    history,
    files,
    problems,
    ...(endOffset !== undefined ? { endOffset } : {}),
    ...(startOffset !== undefined ? { startOffset } : {}),
  };
}

/**
 * A whole file through a decoder: read directly here, streamed from an SSH host. A file the readers
 * refuse (a FIFO, a device: core/protocol/regular-file.ts) is a problem of the run, not the end. A
 * record cut short by the end of the file is a problem too: the watch waits for the rest of it, a
 * reading made once would otherwise say nothing of it.
 */
async function readAll<R>(
  machine: RunMachine,
  file: string,
  decoder: DecoderFactory<R>,
  partialIsProblem = true,
): Promise<DecodedBatch<R>> {
  let batch: DecodedBatch<R>;
  let size: number;
  try {
    if (machine instanceof LocalMachine) {
      batch = await (decoder.localReader?.(file, 0) ?? new GrowingFileReader(file, decoder)).read();
      const read = batch;
      size = await stat(file).then(
        (s) => s.size,
        () => read.offset,
      );
    } else {
      const bytes = await machine.readFile(file, MAX_REMOTE_BYTES);
      batch = decoder(0).push(bytes);
      size = bytes.length;
    }
  } catch (e) {
    if (!(e instanceof RefusedFile)) throw e;
    return { entries: [], problems: [{ offset: 0, message: e.message, excerpt: '' }], offset: 0 };
  }
  if (partialIsProblem && size > batch.offset) {
    const bytes = size - batch.offset;
    batch.problems.push({
      offset: batch.offset,
      message: `the last record is incomplete: ${bytes} byte${bytes === 1 ? '' : 's'} after the last complete one (the writer is still writing it, or the file was cut short)`,
      excerpt: '',
    });
  }
  return batch;
}

/** What is read of one remote file at most (it is held in memory once). */
const MAX_REMOTE_BYTES = 2 ** 31 - 1;
