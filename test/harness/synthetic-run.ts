// Test data: a process that writes a run directory the way the trainer does (run.json kept up to
// date, metrics.jsonl appended event by event — under an owner, its own file the owner merges
// into it — to the protocol's schema) at a chosen pace, without
// training anything. Used where the subject under test is watching, not training: the watch layer
// over a real sshd, and the benchmarks that need an exact event rate (100 events/s) or a million
// points. Run: node --import tsx test/harness/synthetic-run.ts --run-dir DIR --steps N [--rate HZ]
//   [--resume] [--nan-at STEP] [--every-ckpt N]; SIGTERM ends it with run_end "stopped".
//   The watch UI's tests add: --rich (a run_start and steps as the native runtime writes them: config,
//   parameters, peak FLOP/s and its source, MFU, resident memory, every event echoed to stdout and words on stderr),
//   --loss-spike-at STEP (the loss 2.2× its level), --grad-spike-every N (a grad-norm spike the
//   runtime reports, clipped at 1.0), --first-step-after S, --save-ms MS, --lr X, --eval-every N.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { MetricsEvent } from '../../core/protocol/metrics';

export interface SyntheticRunOptions {
  runDir: string;
  steps: number;
  /** Step events per second (0: as fast as possible). */
  rate: number;
  /** Continue the run in runDir from its last checkpoint, appending a run_start with start_step. */
  resume: boolean;
  /** Plant a NaN at this step (anomaly with a dump naming layer 1, then run_end failed). */
  nanAt?: number;
  checkpointEvery: number;
  rich: boolean;
  lossSpikeAt?: number;
  gradSpikeEvery?: number;
  /** Seconds between run_start and the first step (start-up of a big model). */
  firstStepAfter: number;
  /** How long a checkpoint save takes before its event. */
  saveMs: number;
  lr: number;
  evalEvery: number;
}

const plan = {
  params: 4e6,
  grads: 4e6,
  optimizer: 8e6,
  activations: 2e7,
  workspace: 1e6,
  comm: 0,
  other: 0,
  total: 3.7e7,
};

/** The loss of step s: a decaying curve with deterministic wiggle, so tests can predict any point. */
export function syntheticLoss(step: number): number {
  return 2 + 3 * Math.exp(-step / 200) + 0.05 * Math.sin(step * 0.7);
}

export function parseArgs(argv: string[]): SyntheticRunOptions {
  const get = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const runDir = get('--run-dir');
  if (!runDir) throw new Error('--run-dir is required');
  return {
    runDir,
    steps: Number(get('--steps') ?? 100),
    rate: Number(get('--rate') ?? 50),
    resume: argv.includes('--resume'),
    nanAt: get('--nan-at') !== undefined ? Number(get('--nan-at')) : undefined,
    checkpointEvery: Number(get('--every-ckpt') ?? 25),
    rich: argv.includes('--rich'),
    lossSpikeAt: get('--loss-spike-at') !== undefined ? Number(get('--loss-spike-at')) : undefined,
    gradSpikeEvery: get('--grad-spike-every') !== undefined ? Number(get('--grad-spike-every')) : undefined,
    firstStepAfter: Number(get('--first-step-after') ?? 0),
    saveMs: Number(get('--save-ms') ?? 0),
    lr: Number(get('--lr') ?? 1e-3),
    evalEvery: Number(get('--eval-every') ?? 0),
  };
}

export async function writeSyntheticRun(o: SyntheticRunOptions): Promise<void> {
  mkdirSync(o.runDir, { recursive: true });
  const metrics = path.join(o.runDir, 'metrics.jsonl');
  const events = eventFile(o.runDir);
  const runId = path.basename(o.runDir);
  const now = () => Date.now() / 1000;
  const emit = (e: Record<string, unknown>) => {
    const line = `${JSON.stringify({ v: 1, time: now(), ...e } as MetricsEvent)}\n`;
    appendFileSync(events, line);
    // The runtime echoes every event to its stdout too (native/src/metrics/metrics_log.cc).
    if (o.rich) process.stdout.write(line);
  };
  const lastCheckpoint = o.resume ? lastCheckpointStep(metrics) : 0;
  updateManifest(o.runDir, {
    status: 'running',
    step: lastCheckpoint,
    max_steps: o.steps,
    runtime_version: 'synthetic',
  });
  let step = lastCheckpoint;
  let stopping = false;
  process.on('SIGTERM', () => (stopping = true));
  // As the runtime does, a resume says so in a log line before its run_start: a reader must not
  // take lines after an earlier run_end for the end of the run.
  if (o.resume) {
    emit({
      type: 'log',
      level: 'info',
      msg: `resumed from checkpoints/step-${lastCheckpoint} at step ${lastCheckpoint}`,
    });
    await new Promise((r) => setTimeout(r, 500)); // loading the checkpoint takes a moment
  }
  emit({
    type: 'run_start',
    run_id: runId,
    config: o.rich
      ? richConfig(o)
      : { name: 'synthetic', training: { max_steps: o.steps, ...(o.lr !== 1e-3 ? { learning_rate: o.lr } : {}) } },
    world: { size: 1, ranks: [{ rank: 0, host: 'localhost', device: 'cpu', pid: process.pid }] },
    memory_plan: plan,
    ...(o.resume ? { start_step: lastCheckpoint, resumed_from: `checkpoints/step-${lastCheckpoint}` } : {}),
    ...(o.rich
      ? {
          n_params: 124_439_808,
          flops_per_token: 7.5e8,
          peak_flops: 2.35e11,
          peak_source: 'sgemm measured on this machine (synthetic)',
        }
      : {}),
  });
  if (o.rich) console.error(`synthetic: model ready, ${o.steps} steps`);
  if (o.firstStepAfter > 0) await new Promise((r) => setTimeout(r, o.firstStepAfter * 1000));
  const t0 = Date.now();
  while (step < o.steps && !stopping) {
    step++;
    if (o.rate > 0) {
      const due = t0 + ((step - lastCheckpoint) * 1000) / o.rate;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    if (step === o.nanAt) {
      const dump = `diagnostics/step-${String(step).padStart(8, '0')}-nan.json`;
      mkdirSync(path.join(o.runDir, 'diagnostics'), { recursive: true });
      // The runtime's dump format (native/src/diagnostics/nan_dump.cc), with made-up statistics.
      const stat = (layer: number, op: string, maxAbs: number | null, nonfinite: number) => ({
        phase: 'forward',
        kind: 'activation',
        layer,
        op,
        name: `${op}.out`,
        mean: maxAbs === null ? null : 0.01,
        std: maxAbs === null ? null : 1,
        max_abs: maxAbs,
        nonfinite,
      });
      writeFileSync(
        path.join(o.runDir, dump),
        JSON.stringify({
          format: 'fsdp-studio-nan-dump',
          version: 1,
          step,
          where: { phase: 'forward', layer: 1, op: 'attn.softmax' },
          tokens: [[...'Synthetic batch text'].map((c) => c.charCodeAt(0))],
          stats: [stat(0, 'attn.softmax', 0.9, 0), stat(0, 'mlp.gelu', 3.2, 0), stat(1, 'attn.softmax', null, 4096)],
        }),
      );
      emit({
        type: 'step',
        step,
        loss: null,
        lr: 1e-3,
        grad_norm: null,
        tokens_per_s: 1000,
        step_ms: 10,
        mem_peak: 3.7e7,
        skipped: true,
      });
      emit({
        type: 'anomaly',
        step,
        kind: 'nan',
        where: { phase: 'forward', layer: 1, op: 'attn.softmax' },
        action: 'stop',
        dump,
      });
      emit({ type: 'run_end', status: 'failed', step: step - 1, reason: 'NaN in forward, layer 1 (attn.softmax)' });
      updateManifest(o.runDir, { status: 'failed', step: step - 1, end_reason: 'NaN' });
      return;
    }
    const loss = syntheticLoss(step) * (step === o.lossSpikeAt ? 2.2 : 1);
    const gradSpike = o.gradSpikeEvery !== undefined && step % o.gradSpikeEvery === 0;
    const gradNorm = gradSpike ? 2.4930341506992773 : 1 + 1 / step;
    const rich = o.rich
      ? { mem_rss: 9.1e7 + (step % 3) * 2e5, mfu: 0.31 + 0.01 * Math.sin(step), flops_per_s: 7.3e10 }
      : {};
    emit({
      type: 'step',
      step,
      loss,
      lr: o.lr * Math.min(1, step / 20),
      grad_norm: gradNorm,
      tokens_per_s: 1000 + (step % 7),
      step_ms: 10,
      mem_peak: 3.7e7 + (step % 5) * 1e5,
      ...rich,
    });
    if (gradSpike)
      emit({
        type: 'anomaly',
        step,
        kind: 'spike',
        where: { phase: 'loss' },
        action: 'report',
        value: gradNorm,
        zscore: 7.3,
        metric: 'grad_norm',
        dump: null,
      });
    if (o.evalEvery > 0 && step % o.evalEvery === 0) emit({ type: 'eval', step, val_loss: syntheticLoss(step) + 0.1 });
    if (step % o.checkpointEvery === 0) {
      if (o.saveMs > 0) await new Promise((r) => setTimeout(r, o.saveMs));
      emit({ type: 'checkpoint', step, path: `checkpoints/step-${step}`, bytes: 1.6e7 });
      updateManifest(o.runDir, { step });
    }
  }
  const status = stopping ? 'stopped' : 'completed';
  emit({ type: 'run_end', status, step, ...(stopping ? { reason: 'SIGTERM' } : {}) });
  updateManifest(o.runDir, { status, step });
}

/** A config with the sections the dashboard summarises, as the runtime resolves it. */
function richConfig(o: SyntheticRunOptions): Record<string, unknown> {
  return {
    name: 'synthetic',
    model: { d_model: 768, n_layers: 12, n_heads: 12, vocab_size: 50304, max_seq_len: 1024 },
    data: { train: 'data/train.bin', seq_len: 256 },
    training: {
      batch_size_per_gpu: 4,
      gradient_accumulation_steps: 1,
      max_steps: o.steps,
      learning_rate: o.lr,
      warmup_steps: 20,
      max_grad_norm: 1.0,
      schedule: 'warmup_cosine',
    },
    checkpointing: { save_every_n_steps: o.checkpointEvery, save_final: false },
    launch: { device: 'cpu' },
  };
}

/**
 * Where this process writes its events, as the runtime chooses (native/src/train/run_folder.cc
 * event_log_path): under an owner that merges this folder's stream (FSDP_RUN_OWNER_MERGES names it,
 * FSDP_RUN_ATTEMPT names the attempt) its own file, events/<attempt>/runtime.jsonl, which the owner
 * merges into metrics.jsonl and takes run.json's running, step and end from; else metrics.jsonl,
 * being its only writer.
 */
function eventFile(runDir: string): string {
  const owner = process.env.FSDP_RUN_OWNER_MERGES;
  const attempt = process.env.FSDP_RUN_ATTEMPT;
  if (owner && attempt && /^[A-Za-z0-9_-]{1,64}$/.test(attempt) && sameFolder(owner, runDir)) {
    const folder = path.join(runDir, 'events', attempt);
    mkdirSync(folder, { recursive: true });
    return path.join(folder, 'runtime.jsonl');
  }
  return path.join(runDir, 'metrics.jsonl');
}

function sameFolder(a: string, b: string): boolean {
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

/**
 * Standalone test data only: under a supervisor (started as a run is, FSDP_STUDIO_RUN_DIR set) this
 * process is the runtime, which writes events and leaves run.json to its owner. Otherwise keeps the
 * fields already there: read, merge, rename.
 */
function updateManifest(runDir: string, fields: Record<string, unknown>): void {
  if (process.env.FSDP_STUDIO_RUN_DIR && path.resolve(process.env.FSDP_STUDIO_RUN_DIR) === path.resolve(runDir)) return;
  const file = path.join(runDir, 'run.json');
  const current = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>)
    : {
        v: 1,
        run_id: path.basename(runDir),
        created: Date.now() / 1000,
        config: {},
        world: { size: 1 },
        host: 'localhost',
      };
  writeFileSync(`${file}.tmp`, JSON.stringify({ ...current, ...fields, updated: Date.now() / 1000 }, null, 2));
  renameSync(`${file}.tmp`, file);
}

function lastCheckpointStep(metrics: string): number {
  if (!existsSync(metrics)) return 0;
  let last = 0;
  for (const line of readFileSync(metrics, 'utf8').split('\n')) {
    if (!line.includes('"checkpoint"')) continue;
    const e = JSON.parse(line) as { type: string; step: number };
    if (e.type === 'checkpoint') last = e.step;
  }
  return last;
}

if (process.argv[1] && /synthetic-run\.ts$/.test(process.argv[1])) {
  writeSyntheticRun(parseArgs(process.argv.slice(2))).catch((e) => {
    console.error(`synthetic-run: ${(e as Error).message}`);
    process.exit(1);
  });
}
