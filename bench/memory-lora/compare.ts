// `npm run bench:memory-lora`: the LoRA estimate (core/memory/lora.ts, the PyTorch replay) against
// PyTorch's MemTracker on the CPU (bench/memory-lora/measure.py: a Hugging Face model of a published
// shape, random init, PEFT's get_peft_model, AdamW), issue 36's item 2: SmolLM2-360M, Qwen3-0.6B and
// Llama-3.2-1B widths and vocabularies, with and without gradient checkpointing, all-linear and q/v
// adapters, two ranks. The CPU replay has no caching allocator, so the peak compared is the tensors'
// bytes at the highest moment: what MemTracker's "Total" peak counts.
// `-- --layers N` (default 4) keeps N blocks of each model, so the grid runs on two shared cores;
// `-- --only SHAPE` runs one shape, `-- --batch N` sequences of 256 tokens (default 1). Writes bench/results/memory-lora-<date>.{md,json}.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { defaultMemoryInput, type Dtype, type MemoryInput } from '../../core/memory/memory-input';
import type { ModelShape } from '../../core/memory/model-shape';
import { benchContext } from '../run-context';
import { SHAPES } from './shapes';

const root = path.resolve(__dirname, '../..');
const python = path.join(root, '.venv', 'bin', 'python');
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const layers = Number(arg('layers') ?? 4);
const only = arg('only');
// `-- --full`: full fine-tuning rows instead (no PEFT; the weights, gradients and AdamW states in --dtype).
const full = process.argv.includes('--full');
const dtype = (arg('dtype') ?? 'float32') as Dtype;
const SEQ = 256;
const BATCH = Number(arg('batch') ?? 1);
const DROPOUT = 0.05;
// `-- --world N`: N ranks under DDP, each a real gloo process (measure.py --world), against the replay's DDP.
const WORLD = Number(arg('world') ?? 1);
// `-- --world N --fsdp`: FSDP2 over the PEFT model instead (fully_shard per decoder block and at the root,
// as accelerate's FSDP2 plugin wraps it), against the replay's FULL_SHARD.
const FSDP = WORLD > 1 && process.argv.includes('--fsdp');
// `-- --r 8`: one rank instead of 8 and 64.
const RANKS = arg('r') ? [Number(arg('r'))] : [8, 64];

interface Row {
  shape: string;
  targets: 'all-linear' | 'qv' | 'none';
  r: number;
  gc: boolean;
}

interface Tracked {
  trainable: number;
  parameters: number;
  peak: Record<string, number>;
  torch: string;
  /** --world > 1: each rank's peak "Total". */
  rank_peaks?: number[];
}

const rows: Row[] = [];
for (const shape of Object.keys(SHAPES))
  for (const gc of [false, true])
    for (const targets of full ? (['none'] as const) : (['all-linear', 'qv'] as const))
      for (const r of full ? [0] : RANKS) if (!only || only === shape) rows.push({ shape, targets, r, gc });

function inputOf(row: Row): MemoryInput {
  const shape: ModelShape = { ...SHAPES[row.shape], nLayers: layers };
  return {
    ...defaultMemoryInput(shape, SEQ),
    device: 'cpu',
    strategy: FSDP ? 'FULL_SHARD' : 'NO_SHARD',
    nprocPerNode: WORLD,
    microBatch: BATCH,
    precision: { param: dtype, reduce: dtype, activation: dtype },
    checkpointing: { policy: row.gc ? 'every_n' : 'none', everyN: 1 },
    dropout: 0,
    ...(dtype !== 'float32' ? { weights: { dtype } } : {}),
    ...(row.targets === 'none' ? {} : { lora: loraOf(row) }),
  };
}

function loraOf(row: Row): NonNullable<MemoryInput['lora']> {
  return {
    r: row.r,
    alpha: 2 * row.r,
    dropout: DROPOUT,
    targets: row.targets === 'all-linear' ? 'all-linear' : ['q_proj', 'v_proj'],
    modulesToSave: [],
    adapterDtype: 'float32',
  };
}

const MB = 1e6;
// One Python process per shape measures all its rows (the libraries are imported once: most of a
// row's time on a loaded machine); one JSON line comes back per row, in order.
const common = [
  '--layers',
  String(layers),
  '--dropout',
  String(DROPOUT),
  '--dtype',
  dtype,
  '--seq',
  String(SEQ),
  '--batch',
  String(BATCH),
  '--steps',
  '1',
  '--world',
  String(WORLD),
  ...(FSDP ? ['--fsdp'] : []),
];
const results = Object.keys(SHAPES).flatMap((shape) => {
  const mine = rows.filter((r) => r.shape === shape);
  if (!mine.length) return [];
  const spec = mine.map((r) => ({ shape: r.shape, targets: r.targets, r: r.r, gc: r.gc }));
  const out = execFileSync(python, [path.join(__dirname, 'measure.py'), ...common, '--rows', JSON.stringify(spec)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 1 << 26,
  });
  const lines = out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'));
  if (lines.length !== mine.length)
    throw new Error(`measure.py gave ${lines.length} rows for ${mine.length} of ${shape}`);
  return mine.map((row, i) => {
    const m = JSON.parse(lines[i]) as Tracked;
    const e = estimateMemory(inputOf(row));
    const measured = m.peak.Total;
    const estimated = e.peak.total;
    const error = (estimated - measured) / measured;
    console.log(
      `${row.shape} ${row.targets} r${row.r} ${row.gc ? 'gc' : 'no-gc'}: measured ${(measured / MB).toFixed(1)} MB, estimated ${(estimated / MB).toFixed(1)} MB, ${(100 * error).toFixed(1)} %`,
    );
    return {
      ...row,
      measured,
      estimated,
      error,
      trackedPeak: m.peak,
      estimatePeak: e.peak,
      trainable: m.trainable,
      torch: m.torch,
      ...(m.rank_peaks ? { rankPeaks: m.rank_peaks } : {}),
    };
  });
});

const abs = results.map((r) => Math.abs(r.error)).sort((a, b) => a - b);
const median = abs.length % 2 ? abs[(abs.length - 1) / 2] : (abs[abs.length / 2 - 1] + abs[abs.length / 2]) / 2;
const worst = abs[abs.length - 1];
const { commit, date, machine } = benchContext(root);
const command = `npm run bench:memory-lora --${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
const md = [
  `# LoRA memory: the estimate against PyTorch's MemTracker on the CPU (${date})`,
  '',
  `Command: \`${command}\` (commit ${commit}; ${machine.cpu}, ${machine.cores} cores, load ${machine.loadAverage1m}; torch ${results[0]?.torch}, peft 0.21.2, transformers 5.24.0).`,
  `Each row: a Hugging Face model of the shape (${layers} blocks, random init, ${dtype} weights), PEFT LoRA (alpha 2r, dropout ${DROPOUT}), micro-batch ${BATCH} × ${SEQ} tokens, step 2 (the first with AdamW's states; step 1 untracked) of forward, fp32 cross-entropy, backward, AdamW (foreach); MemTracker's peak "Total" against the replay's peak (device cpu: tensors' bytes, no allocator).${WORLD > 1 ? ` ${WORLD} ranks: DistributedDataParallel over the PEFT model (bucket_cap_mb 25, gradient_as_bucket_view off), each rank a real gloo process with its own batch; the measured figure is the highest rank's peak (DDP rebuilds its buckets at step 2's forward, inside the tracked step), the estimate the replay's DDP (the gradients' buckets once more).` : ''}`.replace(
    /DistributedDataParallel over the PEFT model.*$/,
    FSDP
      ? "FSDP2 over the PEFT model (fully_shard per decoder layer, then the PeftModel, MixedPrecisionPolicy() — accelerate's FSDP2 plugin's wrapping), each rank a real gloo process with its own batch; the measured figure is the highest rank's peak, the estimate the replay's FULL_SHARD with LoRA (frozen base and adapters sharded and all-gathered per unit, only the adapters reduce-scattered and stepped)."
      : '$&',
  ),
  '',
  '| shape | targets | r | checkpointing | trainable | measured MB | of it activations and temporaries | estimated MB | error |',
  '|---|---|---:|---|---:|---:|---:|---:|---:|',
  ...results.map(
    (r) =>
      `| ${r.shape} | ${r.targets === 'qv' ? 'q, v' : r.targets === 'none' ? 'full fine-tuning' : 'all-linear'} | ${r.r} | ${r.gc ? 'every block' : 'none'} | ${r.trainable.toLocaleString('en')} | ${(r.measured / MB).toFixed(1)} | ${(((r.trackedPeak['_MemRefType.ACT'] ?? 0) + (r.trackedPeak['_MemRefType.TEMP'] ?? 0)) / MB).toFixed(1)} | ${(r.estimated / MB).toFixed(1)} | ${(100 * r.error).toFixed(1)} % |`,
  ),
  '',
  `Median |error| ${(100 * median).toFixed(1)} %, worst ${(100 * worst).toFixed(1)} % (issue 36's target: 5 % median, 10 % worst).`,
  '',
];
const base = path.join(
  root,
  'bench',
  'results',
  `memory-lora-${date}${dtype !== 'float32' ? `-${dtype}` : ''}${BATCH !== 1 ? `-batch${BATCH}` : ''}${WORLD > 1 ? `-${FSDP ? 'fsdp' : 'ddp'}${WORLD}` : ''}${arg('r') ? `-r${arg('r')}` : ''}${full ? '-full' : ''}${only ? `-${only}` : ''}`,
);
writeFileSync(`${base}.md`, md.join('\n'));
writeFileSync(
  `${base}.json`,
  `${JSON.stringify({ command, commit, date, machine, layers, seq: SEQ, batch: BATCH, world: WORLD, fsdp: FSDP, dtype, median, worst, results }, null, 2)}\n`,
);
console.log(md.slice(-2).join('\n'));
