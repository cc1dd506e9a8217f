// `npm run bench:memory-lora-zero`: the ZeRO + LoRA estimate (core/memory/frameworks/deepspeed.ts) against
// DeepSpeed itself, 2 real gloo ranks on the CPU (bench/memory-lora/measure_zero.py: DeepSpeed's CPU
// accelerator, a PEFT model of measure.py's shapes, the CPU allocator's own peak), issue 36.
// DeepSpeed is no dependency of the project: DS_PYTHON names a Python that has it (measure_zero.py's
// docstring makes one in a minute); without it the bench says so and stops.
// `-- --stage 2,3` (default) the ZeRO stages, `-- --only SHAPE` one shape, `-- --layers N` (4), `-- --overlap`
// overlap_comm on. Writes bench/results/memory-lora-<date>-zero.{md,json}.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { defaultMemoryInput, ZERO_DEFAULTS, type MemoryInput } from '../../core/memory/memory-input';
import type { ModelShape } from '../../core/memory/model-shape';
import { benchContext } from '../run-context';
import { SHAPES } from './shapes';

const root = path.resolve(__dirname, '../..');
const python = process.env.DS_PYTHON;
if (!python || !existsSync(python)) {
  console.error('DS_PYTHON must name a Python with DeepSpeed (see bench/memory-lora/measure_zero.py)');
  process.exit(2);
}
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const layers = Number(arg('layers') ?? 4);
const only = arg('only');
const stages = (arg('stage') ?? '2,3').split(',').map(Number);
const overlap = process.argv.includes('--overlap');
const SEQ = 256;
const R = 8;
const DROPOUT = 0.05;
const WORLD = 2;
// Larger than every row's trainable size and smaller than its model: a bucket capped at either would show.
const BUCKET = 5_000_000;
const STRATEGY = ['NO_SHARD', 'SHARD_OPTIMIZER', 'SHARD_GRAD_OP', 'FULL_SHARD'] as const;

interface Row {
  shape: string;
  stage: number;
  gc: boolean;
}
const rows: Row[] = [];
for (const shape of Object.keys(SHAPES))
  for (const stage of stages)
    for (const gc of [false, true]) if (!only || only === shape) rows.push({ shape, stage, gc });

function inputOf(row: Row): MemoryInput {
  const shape: ModelShape = { ...SHAPES[row.shape], nLayers: layers };
  return {
    ...defaultMemoryInput(shape, SEQ),
    framework: 'deepspeed',
    device: 'cpu',
    strategy: STRATEGY[row.stage],
    nprocPerNode: WORLD,
    microBatch: 1,
    precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' },
    checkpointing: { policy: row.gc ? 'every_n' : 'none', everyN: 1 },
    dropout: 0,
    zero: { ...ZERO_DEFAULTS, reduceBucketSize: BUCKET, overlapComm: overlap },
    lora: { r: R, alpha: 2 * R, dropout: DROPOUT, targets: 'all-linear', modulesToSave: [], adapterDtype: 'float32' },
  };
}

const MB = 1e6;
const results = rows.map((row) => {
  // One spawn per row: DeepSpeed keeps global state between engines in one process.
  const out = execFileSync(
    python,
    [
      path.join(__dirname, 'measure_zero.py'),
      ...['--shape', row.shape, '--layers', String(layers), '--stage', String(row.stage), '--r', String(R)],
      ...['--dropout', String(DROPOUT), '--seq', String(SEQ), '--reduce-bucket', String(BUCKET), '--steps', '1'],
      ...(row.gc ? ['--gc'] : []),
      ...(overlap ? ['--overlap-comm'] : []),
    ],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 1 << 26,
      cwd: __dirname,
      env: { ...process.env, DS_ACCELERATOR: 'cpu' },
    },
  );
  const line = out.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`measure_zero.py gave no row for ${JSON.stringify(row)}`);
  const m = JSON.parse(line) as {
    peak: number;
    rank_peaks: number[];
    trainable: number;
    deepspeed: string;
    torch: string;
  };
  const estimated = estimateMemory(inputOf(row)).peak.total;
  const error = (estimated - m.peak) / m.peak;
  console.log(
    `${row.shape} ZeRO-${row.stage} ${row.gc ? 'gc' : 'no-gc'}: measured ${(m.peak / MB).toFixed(1)} MB, estimated ${(estimated / MB).toFixed(1)} MB, ${(100 * error).toFixed(1)} %`,
  );
  return {
    ...row,
    measured: m.peak,
    rankPeaks: m.rank_peaks,
    estimated,
    error,
    trainable: m.trainable,
    deepspeed: m.deepspeed,
    torch: m.torch,
  };
});

const abs = results.map((r) => Math.abs(r.error)).sort((a, b) => a - b);
const median = abs.length % 2 ? abs[(abs.length - 1) / 2] : (abs[abs.length / 2 - 1] + abs[abs.length / 2]) / 2;
const worst = abs[abs.length - 1];
const { commit, date, machine } = benchContext(root);
const command = `DS_PYTHON=… npm run bench:memory-lora-zero --${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
const md = [
  `# ZeRO over a LoRA model: the estimate against DeepSpeed on the CPU (${date})`,
  '',
  `Command: \`${command}\` (commit ${commit}; ${machine.cpu}, ${machine.cores} cores, load ${machine.loadAverage1m}; DeepSpeed ${results[0]?.deepspeed} with its CPU accelerator, torch ${results[0]?.torch}, peft 0.21.2, transformers 5.24.0).`,
  `Each row: a Hugging Face model of the shape (${layers} blocks, random init, loaded in fp32), PEFT LoRA all-linear r ${R} (alpha 2r, dropout ${DROPOUT}), deepspeed.initialize with bf16, ZeRO stage as given, reduce_bucket_size ${BUCKET.toLocaleString('en')}, contiguous_gradients, overlap_comm ${overlap ? 'on' : 'off'}, a client torch AdamW (foreach) over the trainable parameters; ${WORLD} ranks, each a real gloo process with its own micro-batch of 1 × ${SEQ} tokens; step 2 (step 1 untracked) of forward, fp32 cross-entropy, engine.backward, engine.step. Measured: every live tensor storage at the step's start plus the highest running sum of the CPU allocator's allocations and frees in the step (torch.profiler profile_memory), the highest rank; estimated: the DeepSpeed model on device cpu (tensors' bytes, no allocator).`,
  '',
  '| shape | ZeRO stage | checkpointing | trainable | measured MB | estimated MB | error |',
  '|---|---:|---|---:|---:|---:|---:|',
  ...results.map(
    (r) =>
      `| ${r.shape} | ${r.stage} | ${r.gc ? 'every block' : 'none'} | ${r.trainable.toLocaleString('en')} | ${(r.measured / MB).toFixed(1)} | ${(r.estimated / MB).toFixed(1)} | ${(100 * r.error).toFixed(1)} % |`,
  ),
  '',
  `Median |error| ${(100 * median).toFixed(1)} %, worst ${(100 * worst).toFixed(1)} %.`,
  '',
];
const base = path.join(
  root,
  'bench',
  'results',
  `memory-lora-${date}-zero${overlap ? '-overlap' : ''}${only ? `-${only}` : ''}`,
);
writeFileSync(`${base}.md`, md.join('\n'));
writeFileSync(
  `${base}.json`,
  `${JSON.stringify({ command, commit, date, machine, layers, seq: SEQ, r: R, world: WORLD, bucket: BUCKET, overlap, median, worst, results }, null, 2)}\n`,
);
console.log(md.slice(-2).join('\n'));
