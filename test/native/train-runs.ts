// Runs `fsdp-train` (the real CLI and the real native trainer) on small configs over the sample
// corpus, and reads back what a run leaves: metrics.jsonl through RunLogReader, run.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { RunLogReader, type RunLogProblem } from '../../core/protocol/run-log-reader';
import type { MetricsEvent, MetricsEventOf } from '../../core/protocol/metrics';
import { repoRoot } from './native-build';

export const sampleData = path.join(repoRoot, 'samples', 'data');
const cliShim = path.join(repoRoot, 'bin', 'fsdp-train.mjs');

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `fsdp-${prefix}-`));
}

/** A small run config over the byte-level fortunes data: fast enough for many runs in a test. */
export function smallConfig(overrides: Record<string, Record<string, unknown>> = {}): Record<string, unknown> {
  const base: Record<string, Record<string, unknown>> = {
    model: { d_model: 32, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32 },
    data: {
      train: path.join(sampleData, 'fortunes-byte-train.tok'),
      val: path.join(sampleData, 'fortunes-byte-val.tok'),
      seq_len: 32,
    },
    training: { batch_size_per_gpu: 4, max_steps: 12, learning_rate: 0.003, warmup_steps: 2, seed: 7 },
    fsdp: { sharding_strategy: 'NO_SHARD' },
    checkpointing: { save_every_n_steps: 0, keep_last_n: 3 },
    logging: { eval_batches: 2 },
    launch: { threads_per_rank: 2 },
  };
  for (const [section, values] of Object.entries(overrides)) base[section] = { ...base[section], ...values };
  return { name: 'small', ...base };
}

export function writeConfig(dir: string, config: Record<string, unknown>, name = 'run.json'): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

export interface TrainResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts `fsdp-train ARGS`; `onLine` sees each stdout line as it arrives (it may kill the run).
 * `detached`: in a process group of its own, as a terminal's foreground job or the editor's launch.
 * `env`: added to this process's environment for the run.
 */
export function startTrain(
  args: string[],
  onLine?: (line: string, child: ChildProcess) => void,
  opts: { detached?: boolean; env?: Record<string, string> } = {},
): { child: ChildProcess; done: Promise<TrainResult> } {
  const child = spawn(process.execPath, [cliShim, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached ?? false,
    env: { ...process.env, ...opts.env },
  });
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d;
    pending += d;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      onLine?.(line, child);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const done = new Promise<TrainResult>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

export function train(args: string[]): Promise<TrainResult> {
  return startTrain(args).done;
}

export interface RunRecord {
  events: MetricsEvent[];
  problems: RunLogProblem[];
  manifest: RunManifest;
}

/**
 * The pids of the ranks the runtime's last run_start names: its own word, as soon as it has printed
 * it (run.json names them a poll of its supervisor later). Under its owner the runtime appends to
 * events/<attempt>/runtime.jsonl, merged into metrics.jsonl a poll later: that file is read first
 * while the attempt lives, so that a step the runtime printed finds the start it wrote before it.
 */
export function rankPidsOf(runDir: string): number[] {
  const attempts = path.join(runDir, 'events');
  const own = existsSync(attempts)
    ? readdirSync(attempts)
        .map((a) => path.join(attempts, a, 'runtime.jsonl'))
        .filter(existsSync)
    : [];
  for (const file of [...own, path.join(runDir, 'metrics.jsonl')]) {
    const start = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.endsWith('}'))
      .map((l) => JSON.parse(l) as { type: string; world?: { ranks: { pid: number }[] } })
      .filter((e) => e.type === 'run_start')
      .at(-1);
    if (start) return (start.world?.ranks ?? []).map((r) => r.pid);
  }
  return [];
}

/** Rank `rank`'s pid from the run's start, read where the runtime wrote it (rankPidsOf). */
export function rankPid(runDir: string, rank: number): number {
  const pid = rankPidsOf(runDir)[rank];
  if (pid === undefined) throw new Error(`no run_start naming rank ${rank} in ${runDir} yet`);
  return pid;
}

/** The native runtime among `pids` (run.json names its supervisor and launchers too), by its command line. */
export function runtimeAmong(pids: readonly number[]): number | undefined {
  return pids.find((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes('fsdp-train-native');
    } catch {
      return false;
    }
  });
}

/** The events of a run folder, read as the extension reads them (a runtime started by hand has no run.json: that is its supervisor's). */
export async function readEvents(runDir: string): Promise<Omit<RunRecord, 'manifest'>> {
  const batch = await new RunLogReader(path.join(runDir, 'metrics.jsonl')).read();
  return { events: batch.entries.map((e) => e.event), problems: batch.problems };
}

/** Everything a run folder holds, read as the extension reads it; throws on a bad run.json. */
export async function readRun(runDir: string): Promise<RunRecord> {
  const batch = await new RunLogReader(path.join(runDir, 'metrics.jsonl')).read();
  const parsed = parseRunManifest(readFileSync(path.join(runDir, 'run.json'), 'utf8'));
  if ('error' in parsed) throw new Error(parsed.error);
  return { events: batch.entries.map((e) => e.event), problems: batch.problems, manifest: parsed.manifest };
}

export function eventsOf<T extends MetricsEvent['type']>(events: MetricsEvent[], type: T): MetricsEventOf<T>[] {
  return events.filter((e): e is MetricsEventOf<T> => e.type === type);
}

/**
 * The loss of every step as the protocol defines the run's history: when a later run_start says
 * the run restarted from step S, the events of steps after S logged before it are replaced.
 */
export function lossHistory(events: MetricsEvent[]): Map<number, number | null> {
  const losses = new Map<number, number | null>();
  for (const e of events) {
    if (e.type === 'run_start')
      for (const step of [...losses.keys()]) if (step > (e.start_step ?? 0)) losses.delete(step);
    if (e.type === 'step') losses.set(e.step, e.loss);
  }
  return losses;
}

export function exists(file: string): boolean {
  return existsSync(file);
}
