// Which PyTorch runs the memory estimate has been held to on a real GPU, and whether an input is far
// from all of them. The replay (frameworks/pytorch-replay.ts) reproduces the caching allocator's
// reserved peak to a fraction of a percent on the measured points, including points it was not
// tuned on (bench/memory-accuracy.ts holds it to shapes of another width); outside them it rests on
// PyTorch's code paths alone, and the estimate says so with a range (estimate.ts).
//
// "Far" means: a code path no measurement ran (anything but one GPU running the harness's GPT block,
// plain or FSDP2, fp32 or bf16, no / every-block / selective checkpointing, flash attention, no
// dropout, one micro-step, no offload), or a size more than a factor of FAR_FACTOR outside the
// measured range of that path on one of width, depth, sequence length, tokens per micro-batch or
// vocabulary. The factor is what the held-out check supports: measured widths 512–1280, depths
// 8–24 and 512–16384 tokens, each reproduced from PyTorch's rules with none of them fitted.
//
// MEASURED lists the committed measurements (test/fixtures/measured/ and
// test/fixtures/measured-reserved/); test/unit/memory-coverage.test.ts checks it against the files.
import type { MemoryInput } from './memory-input';
import { worldSize } from './memory-input';

export const FAR_FACTOR = 2;

/** A measured configuration: its code path and sizes. */
export interface MeasuredShape {
  path: string;
  dModel: number;
  nLayers: number;
  seqLen: number;
  microBatch: number;
  vocab: number;
}

const GRID_PATHS = ['plain', 'fsdp2'].flatMap((s) =>
  ['fp32', 'bf16'].flatMap((p) => ['none', 'every', 'selective'].map((c) => `${s}/${p}/${c}`)),
);

function grid(
  models: Array<[number, number]>,
  seqLens: number[],
  microBatches: number[],
  vocab: number,
): MeasuredShape[] {
  return models.flatMap(([dModel, nLayers]) =>
    GRID_PATHS.flatMap((path) =>
      seqLens.flatMap((seqLen) =>
        microBatches.map((microBatch) => ({ path, dModel, nLayers, seqLen, microBatch, vocab })),
      ),
    ),
  );
}

export const MEASURED: readonly MeasuredShape[] = [
  // measured-memory-nvidia-h100-80gb-hbm3-2026-11-23.json: 144 points.
  ...grid(
    [
      [512, 8],
      [768, 12],
    ],
    [512, 1024],
    [1, 2, 4],
    50257,
  ),
  // measured-reserved/issue-29-h100.json: the five points issue 29 quotes.
  { path: 'plain/fp32/every', dModel: 1280, nLayers: 20, seqLen: 2048, microBatch: 8, vocab: 50257 },
  { path: 'fsdp2/fp32/every', dModel: 1280, nLayers: 20, seqLen: 2048, microBatch: 8, vocab: 50257 },
  { path: 'plain/bf16/none', dModel: 1280, nLayers: 20, seqLen: 2048, microBatch: 2, vocab: 50257 },
  { path: 'fsdp2/bf16/none', dModel: 1280, nLayers: 20, seqLen: 2048, microBatch: 2, vocab: 50257 },
  { path: 'fsdp2/bf16/every', dModel: 1024, nLayers: 24, seqLen: 2048, microBatch: 2, vocab: 50257 },
];

/** The measured code path an input runs, or why none did. */
export function measuredPath(input: MemoryInput): { path: string } | { unmeasured: string } {
  const m = input.model;
  if (input.framework !== 'pytorch' || input.device !== 'cuda')
    return { unmeasured: 'only PyTorch on a GPU is measured' };
  if (worldSize(input) > 1) return { unmeasured: 'several ranks are not measured (one GPU only)' };
  // Issue 36: LoRA and bitsandbytes' weights are replayed from PEFT's and bitsandbytes' code, not yet held to a GPU.
  const quant = input.weights?.quant;
  if (input.lora)
    return {
      unmeasured: `LoRA (r ${input.lora.r}${quant ? `, ${quant.kind === 'int8' ? 'int8' : quant.kind.toUpperCase()} weights` : ''}) is not measured on a GPU`,
    };
  if (input.weights && input.weights.dtype !== 'float32')
    return { unmeasured: `${input.weights.dtype} weights (no fp32 master copy) are not measured on a GPU` };
  const gpt =
    m.mlp === 'gelu' &&
    m.norm === 'layernorm' &&
    m.bias &&
    m.positionEmbeddings > 0 &&
    m.tieEmbeddings &&
    m.nKvHeads === m.nHeads &&
    !m.experts &&
    (m.normsPerBlock ?? 2) === 2 &&
    !m.headBias &&
    (m.headDim === undefined || m.headDim * m.nHeads === m.dModel);
  if (!gpt)
    return {
      unmeasured: 'only GPT-2-style blocks are measured (not rotary, SwiGLU, RMSNorm, grouped-query or MoE blocks)',
    };
  if (input.attention !== 'flash')
    return { unmeasured: 'only fused attention (F.scaled_dot_product_attention) is measured' };
  if (input.dropout > 0) return { unmeasured: 'dropout is not measured' };
  if (input.gradAccumSteps > 1) return { unmeasured: 'gradient accumulation is not measured' };
  if (input.offload.optimizer || input.offload.params) return { unmeasured: 'CPU offload is not measured' };
  const strategy = input.strategy === 'NO_SHARD' ? 'plain' : input.strategy === 'FULL_SHARD' ? 'fsdp2' : undefined;
  if (!strategy) return { unmeasured: `${input.strategy} is not measured` };
  const p = input.precision;
  const precision =
    p.param === 'float32' && p.activation === 'float32'
      ? 'fp32'
      : p.param === 'bfloat16' && p.activation === 'bfloat16' && p.reduce === 'float32'
        ? 'bf16'
        : undefined;
  if (!precision)
    return {
      unmeasured: `precision ${p.param}/${p.activation}/${p.reduce} is not measured (fp32, or bf16 with fp32 reduction)`,
    };
  const c = input.checkpointing;
  const policy =
    c.policy === 'none'
      ? 'none'
      : c.policy === 'selective'
        ? 'selective'
        : c.policy === 'every_n' && c.everyN === 1
          ? 'every'
          : undefined;
  if (!policy) return { unmeasured: 'checkpointing every n > 1 blocks is not measured' };
  return { path: `${strategy}/${precision}/${policy}` };
}

/**
 * Why the estimate is unsure for `input` (it is far from every measurement), or undefined when a
 * measurement of the same code path lies within FAR_FACTOR on every size.
 */
export function farFromMeasured(input: MemoryInput): string | undefined {
  const found = measuredPath(input);
  if ('unmeasured' in found) return found.unmeasured;
  const same = MEASURED.filter((s) => s.path === found.path);
  const axes: Array<[string, number, (s: MeasuredShape) => number]> = [
    ['width', input.model.dModel, (s) => s.dModel],
    ['depth', input.model.nLayers, (s) => s.nLayers],
    ['sequence length', input.seqLen, (s) => s.seqLen],
    ['tokens per micro-batch', input.seqLen * input.microBatch, (s) => s.seqLen * s.microBatch],
    ['vocabulary', input.model.vocabSize, (s) => s.vocab],
  ];
  for (const [name, value, of] of axes) {
    const values = same.map(of);
    const lo = Math.min(...values) / FAR_FACTOR;
    const hi = Math.max(...values) * FAR_FACTOR;
    if (value < lo || value > hi)
      return `${name} ${value} is more than ${FAR_FACTOR}× outside the measured ${Math.min(...values)}–${Math.max(...values)}`;
  }
  return undefined;
}
