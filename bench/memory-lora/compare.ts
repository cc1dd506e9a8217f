// `npm run bench:memory-lora`: the LoRA estimate (core/memory/lora.ts, the PyTorch replay) against
// PyTorch's MemTracker on the CPU (bench/memory-lora/measure.py: a Hugging Face model of a published
// shape, random init, PEFT's get_peft_model, AdamW), issue 36's item 2: SmolLM2-360M, Qwen3-0.6B and
// Llama-3.2-1B widths and vocabularies, with and without gradient checkpointing, all-linear and q/v
// adapters, two ranks. The CPU replay has no caching allocator, so the peak compared is the tensors'
// bytes at the highest moment: what MemTracker's "Total" peak counts.
// `-- --layers N` (default 4) keeps N blocks of each model, so the grid runs on two shared cores;
// `-- --only SHAPE` runs one shape, `-- --batch N` sequences of 256 tokens (default 1). Writes bench/results/memory-lora-<date>.{md,json}.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { defaultMemoryInput, type Dtype, type MemoryInput } from '../../core/memory/memory-input';
import type { ModelShape } from '../../core/memory/model-shape';
import { lastJsonLine } from '../memory-nd/bench-plan';
import { benchContext } from '../run-context';

const root = path.resolve(__dirname, '../..');
const python = path.join(root, '.venv', 'bin', 'python');
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const layers = Number(arg('layers') ?? 4);
const only = arg('only');
const dtype = (arg('dtype') ?? 'float32') as Dtype;
const SEQ = 256;
const BATCH = Number(arg('batch') ?? 1);
const DROPOUT = 0.05;

/** The shapes measure.py builds (their config.json), as the estimator's ModelShape. */
const SHAPES: Record<string, Omit<ModelShape, 'nLayers'>> = {
  'smollm2-360m': {
    name: 'SmolLM2-360M',
    vocabSize: 49152,
    dModel: 960,
    nHeads: 15,
    nKvHeads: 5,
    ffnHidden: 2560,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: true,
  },
  'qwen3-0.6b': {
    name: 'Qwen3-0.6B',
    vocabSize: 151936,
    dModel: 1024,
    nHeads: 16,
    nKvHeads: 8,
    headDim: 128,
    ffnHidden: 3072,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: true,
  },
  'llama-3.2-1b': {
    name: 'Llama-3.2-1B',
    vocabSize: 128256,
    dModel: 2048,
    nHeads: 32,
    nKvHeads: 8,
    ffnHidden: 8192,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: true,
  },
};

interface Row {
  shape: string;
  targets: 'all-linear' | 'qv';
  r: number;
  gc: boolean;
}

interface Tracked {
  trainable: number;
  parameters: number;
  peak: Record<string, number>;
  torch: string;
}

const rows: Row[] = [];
for (const shape of Object.keys(SHAPES))
  for (const gc of [false, true])
    for (const targets of ['all-linear', 'qv'] as const)
      for (const r of [8, 64]) if (!only || only === shape) rows.push({ shape, targets, r, gc });

function inputOf(row: Row): MemoryInput {
  const shape: ModelShape = { ...SHAPES[row.shape], nLayers: layers };
  return {
    ...defaultMemoryInput(shape, SEQ),
    device: 'cpu',
    strategy: 'NO_SHARD',
    microBatch: BATCH,
    precision: { param: dtype, reduce: dtype, activation: dtype },
    checkpointing: { policy: row.gc ? 'every_n' : 'none', everyN: 1 },
    dropout: 0,
    ...(dtype !== 'float32' ? { weights: { dtype } } : {}),
    lora: {
      r: row.r,
      alpha: 2 * row.r,
      dropout: DROPOUT,
      targets: row.targets === 'all-linear' ? 'all-linear' : ['q_proj', 'v_proj'],
      modulesToSave: [],
      adapterDtype: 'float32',
    },
  };
}

const MB = 1e6;
const results = rows.map((row) => {
  const args = [
    '--shape',
    row.shape,
    '--layers',
    String(layers),
    '--targets',
    row.targets,
    '--r',
    String(row.r),
    '--dropout',
    String(DROPOUT),
    '--dtype',
    dtype,
    '--seq',
    String(SEQ),
    '--batch',
    String(BATCH),
    ...(row.gc ? ['--gc'] : []),
  ];
  const m = lastJsonLine<Tracked>(python, path.join(__dirname, 'measure.py'), args);
  const e = estimateMemory(inputOf(row));
  const measured = m.peak.Total;
  const estimated = e.peak.total;
  const error = (estimated - measured) / measured;
  const line = `${row.shape} ${row.targets} r${row.r} ${row.gc ? 'gc' : 'no-gc'}: measured ${(measured / MB).toFixed(1)} MB, estimated ${(estimated / MB).toFixed(1)} MB, ${(100 * error).toFixed(1)} %`;
  console.log(line);
  return {
    ...row,
    measured,
    estimated,
    error,
    trackedPeak: m.peak,
    estimatePeak: e.peak,
    trainable: m.trainable,
    torch: m.torch,
  };
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
  `Each row: a Hugging Face model of the shape (${layers} blocks, random init, ${dtype} weights), PEFT LoRA (alpha 2r, dropout ${DROPOUT}), micro-batch ${BATCH} × ${SEQ} tokens, steps 2–3 of forward, fp32 cross-entropy, backward, AdamW (foreach); MemTracker's peak "Total" against the replay's peak (device cpu: tensors' bytes, no allocator).`,
  '',
  '| shape | targets | r | checkpointing | trainable | measured MB | of it activations and temporaries | estimated MB | error |',
  '|---|---|---:|---|---:|---:|---:|---:|---:|',
  ...results.map(
    (r) =>
      `| ${r.shape} | ${r.targets === 'qv' ? 'q, v' : 'all-linear'} | ${r.r} | ${r.gc ? 'every block' : 'none'} | ${r.trainable.toLocaleString('en')} | ${(r.measured / MB).toFixed(1)} | ${(((r.trackedPeak['_MemRefType.ACT'] ?? 0) + (r.trackedPeak['_MemRefType.TEMP'] ?? 0)) / MB).toFixed(1)} | ${(r.estimated / MB).toFixed(1)} | ${(100 * r.error).toFixed(1)} % |`,
  ),
  '',
  `Median |error| ${(100 * median).toFixed(1)} %, worst ${(100 * worst).toFixed(1)} % (issue 36's target: 5 % median, 10 % worst).`,
  '',
];
const base = path.join(
  root,
  'bench',
  'results',
  `memory-lora-${date}${dtype !== 'float32' ? `-${dtype}` : ''}${BATCH !== 1 ? `-batch${BATCH}` : ''}${only ? `-${only}` : ''}`,
);
writeFileSync(`${base}.md`, md.join('\n'));
writeFileSync(
  `${base}.json`,
  `${JSON.stringify({ command, commit, date, machine, layers, seq: SEQ, batch: BATCH, dtype, median, worst, results }, null, 2)}\n`,
);
console.log(md.slice(-2).join('\n'));
