// Our native runtime's byte plan, term by term as native/MEMORY.md states it (and as
// native/src/memory/memory_plan.cc implements it): flat per-unit parameter buffers (embedding,
// blocks, head) padded to a multiple of the shard degree, float32 masters, gradients and AdamW
// moments, activations along the forward/backward timeline, communication buffers in reduce_dtype.
// The plan depends on the backend (launch.device): the CPU keeps the attention's B·H·T²
// probabilities, the CUDA kernels B·H·T log-sum-exps, and the CUDA backend has scratch of its own.
// The runtime plans each phase's peak as a sum of per-category peaks within it, so this model has
// one backward step. test/native/memory-plan-equivalence.test.ts holds it to the addon's memoryPlan().
import type { MemoryInput } from '../memory-input';
import { bytesOf, worldSize } from '../memory-input';
import { parameterTensors, type ModelShape } from '../model-shape';
import type { FrameworkTerms, TermSpec } from './term-spec';

const FP32 = 4;
// The CUDA backend's scratch in backward, by its kernels' row blocking (native/MEMORY.md).
const CUDA_BIAS_ROWS = 256;
const CUDA_LAYERNORM_ROWS = 128;
const CUDA_VOCAB_ALIGNMENT = 128;

/** The vocabulary the LM head's logits have: model.vocab_size, on CUDA padded to a multiple of 128 (native/src/backend/cuda/padded_vocab.h). */
function headVocab(input: MemoryInput): number {
  return input.device === 'cuda'
    ? Math.ceil(input.model.vocabSize / CUDA_VOCAB_ALIGNMENT) * CUDA_VOCAB_ALIGNMENT
    : input.model.vocabSize;
}

/**
 * Numels of the runtime's units in execution order: [embedding, blocks.0 … blocks.L-1, head], from
 * the shape's tensor list — GPT-2's and the Llama family's as native/src/model/param_layout.cc lays
 * them out (test/native/param-count.test.ts holds the totals equal).
 */
function unitNumels(m: ModelShape): number[] {
  const t = parameterTensors(m);
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const block = sum(t.block);
  const units = [sum(t.embedding)];
  for (let i = 0; i < m.nLayers; i++) units.push(block);
  units.push(sum(t.finalNorm) + sum(t.head));
  return units;
}

/** The runtime's shard degree: 1 for NO_SHARD, ranks per node for HYBRID_SHARD, else the world. */
function runtimeShardDegree(input: MemoryInput): number {
  if (input.strategy === 'NO_SHARD') return 1;
  if (input.strategy === 'HYBRID_SHARD') return Math.max(1, input.ranksPerNode ?? input.nprocPerNode);
  return Math.max(1, worldSize(input));
}

/** MEMORY.md's activation pieces (bytes) for one micro-batch, on the plan's backend. */
function runtimeActivationSizes(input: MemoryInput) {
  const m = input.model;
  const B = input.microBatch;
  const T = input.seqLen;
  const N = B * T;
  const C = m.dModel;
  const F = m.ffnHidden;
  const H = m.nHeads;
  const Vh = headVocab(input);
  const a = bytesOf(input.precision.activation);
  const p = bytesOf(input.precision.param);
  const batch = 8 * N;
  const common = {
    /** R: one residual-stream tensor. */
    residual: a * N * C,
    /** K_sel: what selective keeps: qkv, atty, res2, fc. */
    blockSelective: a * (5 * N * C + N * F),
    /** Hd: final LayerNorm output and stats, per-token losses, and the classifier's state: float32 probabilities on the CPU, compute-dtype logits with the vocabulary padded to a multiple of 128 on CUDA. */
    head: a * N * C + 12 * N + (input.device === 'cuda' ? p : 4) * N * Vh,
    /** int32 inputs and targets of one batch. */
    batch,
  };
  if (input.device !== 'cuda') {
    return {
      ...common,
      /** I: a block's saved internals: ln1_out, qkv, atty, res2, ln2_out, fc, gelu, attention probabilities, fp32 LayerNorm stats. */
      block: a * (7 * N * C + 2 * N * F + B * H * T * T) + 16 * N,
      /** Wb: backward scratch. */
      workspace: a * (6 * N * C + N * F + B * H * T * T),
      /** The data loader's ring: the batch in use and the prefetched ones. */
      batches: ((input.prefetchBatches ?? 2) + 1) * batch,
    };
  }
  // CUDA: each attention row's float32 log-sum-exp (and in backward its float32 row term), the
  // backend's largest transient scratch on top of the block's; the device holds the batch in use.
  // The classifier's vocabulary tail (V mod 128 rows) in backward: W's rows zero-padded (param_dtype) and their float32 gradient rows.
  const tail = Vh - Math.floor(m.vocabSize / CUDA_VOCAB_ALIGNMENT) * CUDA_VOCAB_ALIGNMENT;
  const classifier = (p + FP32) * tail * C;
  const bias = 4 * Math.ceil(N / CUDA_BIAS_ROWS) * Math.max(3 * C, F);
  const layernorm = 4 * Math.ceil(N / CUDA_LAYERNORM_ROWS) * 2 * C;
  const embedding = 4 * (3 * N + 1);
  return {
    ...common,
    block: a * (7 * N * C + 2 * N * F) + 4 * B * H * T + 16 * N,
    workspace: a * (6 * N * C + N * F) + 4 * B * H * T + Math.max(classifier, bias, layernorm, embedding),
    batches: batch,
  };
}

/** What each block keeps for backward: 'none' (everything), 'full' (recomputed), 'selective'. */
function runtimeBlockRecompute(input: MemoryInput): Array<'none' | 'full' | 'selective'> {
  const L = input.model.nLayers;
  const c = input.checkpointing;
  if (c.policy === 'selective') return Array(L).fill('selective');
  // every_n checkpoints blocks n-1, 2n-1, … (torchtitan's ac_freq), as the runtime does.
  if (c.policy === 'every_n') return Array.from({ length: L }, (_, i) => ((i + 1) % c.everyN === 0 ? 'full' : 'none'));
  return Array(L).fill('none');
}

export function fsdpStudioTerms(input: MemoryInput): FrameworkTerms {
  const m = input.model;
  const L = m.nLayers;
  const W = worldSize(input);
  const D = runtimeShardDegree(input);
  const p = bytesOf(input.precision.param);
  const r = bytesOf(input.precision.reduce);
  // With one shard there is nothing to shard: every strategy behaves as NO_SHARD.
  const st = D === 1 ? 'NO_SHARD' : input.strategy;
  const optSharded = st !== 'NO_SHARD';
  const gradsSharded = st === 'SHARD_GRAD_OP' || st === 'FULL_SHARD' || st === 'HYBRID_SHARD';
  const paramsSharded = st === 'FULL_SHARD' || st === 'HYBRID_SHARD';
  const offload = input.offload.optimizer || input.offload.params;

  // Per unit: numel P_u, shard S_u = ceil(P_u / D), padded Pp_u = D · S_u.
  const P = unitNumels(m);
  const S = P.map((n) => Math.ceil(n / D));
  const Pp = S.map((s) => s * D);
  const sumP = P.reduce((x, y) => x + y, 0);
  const sumS = S.reduce((x, y) => x + y, 0);
  const U = P.length;
  const head = U - 1;
  const tied = m.tieEmbeddings;

  // Parameters: float32 masters, a compute copy when param_dtype is narrower and parameters are
  // whole, and for sharded parameters the gathered units (with the one prefetched, and the tied
  // embedding while the head computes).
  const master = FP32 * (paramsSharded ? sumS : sumP);
  const computeCopy = !paramsSharded && p < FP32 ? p * sumP : 0;
  let gatheredFwd = 0;
  let gatheredBwd = 0;
  if (paramsSharded) {
    const live = (u: number, prefetch: number) => {
      const set = new Set([u]);
      if (prefetch >= 0 && prefetch < U) set.add(prefetch);
      if (u === head && tied) set.add(0);
      let sum = 0;
      for (const v of set) sum += Pp[v];
      return sum;
    };
    for (let u = 0; u < U; u++) {
      gatheredFwd = Math.max(gatheredFwd, live(u, input.fsdp.forwardPrefetch ? u + 1 : -1));
      gatheredBwd = Math.max(gatheredBwd, live(u, input.fsdp.backwardPrefetch !== 'NONE' ? u - 1 : -1));
    }
    gatheredFwd *= p;
    gatheredBwd *= p;
  }
  const masterDevice = paramsSharded && offload ? 0 : master;

  // Gradients: float32, whole or a shard; sharded ones are computed into whole-unit float32
  // buffers that live until their reduce-scatter (the tied wte's from the head to the embedding).
  // Under gradient accumulation nothing is reduced before the final micro-step (no_sync): every
  // unit's buffer lives from the first micro-step's backward on, through the forwards between.
  const gradsHeld = FP32 * (gradsSharded ? sumS : sumP);
  const gradsPersistent = paramsSharded && offload ? 0 : gradsHeld;
  let gradsTransient = 0;
  let gradsUnsynced = 0;
  if (gradsSharded && input.gradAccumSteps > 1) {
    gradsUnsynced = FP32 * Pp.reduce((x, y) => x + y, 0);
    gradsTransient = gradsUnsynced;
  } else if (gradsSharded) {
    const g = Math.max(...Pp.slice(1));
    gradsTransient = FP32 * (tied ? Pp[0] + g : Math.max(g, Pp[0]));
  }

  const optimizer = 2 * FP32 * (optSharded ? sumS : sumP);
  const optimizerDevice = offload ? 0 : optimizer;

  // Activations along the timeline: L+1 residual-stream tensors, what each block keeps, and at the
  // end of forward the larger of the head or the last block's internals.
  const z = runtimeActivationSizes(input);
  const keep = runtimeBlockRecompute(input).map((b) =>
    b === 'none' ? z.block : b === 'selective' ? z.blockSelective : 0,
  );
  const kept = (L + 1) * z.residual + keep.reduce((x, y) => x + y, 0);
  const lastKeep = keep[L - 1];
  const actFwd = kept + Math.max(z.head, z.block - lastKeep);
  const actBwd = Math.max(kept + z.head, kept - z.residual - lastKeep + z.block);

  // Communication buffers, unit by unit: a unit's reduction holds its reduce_dtype cast (when
  // narrower than float32) and, for sharded gradients, the reduce-scatter's output; a sharded
  // unit's gather sends its shard from a comm buffer when it is cast to param_dtype or, offloaded on
  // a GPU, copied to the device; a prefetched gather holds that buffer while the previous unit's
  // gradients are reduced. None with one rank.
  let commFwd = 0;
  let commBwd = 0;
  if (W > 1) {
    const send = paramsSharded && (p < FP32 || (offload && input.device === 'cuda')) ? p : 0;
    const reduction = (u: number) => (gradsSharded ? (r < FP32 ? r * Pp[u] : 0) + r * S[u] : r < FP32 ? r * P[u] : 0);
    for (let u = 0; u < U; u++) {
      commFwd = Math.max(commFwd, send * S[u]);
      const prefetched = input.fsdp.backwardPrefetch !== 'NONE' && u >= 1 && paramsSharded ? send * S[u - 1] : 0;
      commBwd = Math.max(commBwd, reduction(u) + prefetched, send * S[u]);
    }
  }
  const batches = z.batches;

  const terms: TermSpec[] = [
    {
      id: 'params.masters',
      category: 'params',
      label: paramsSharded ? `float32 parameter shard (1/${D})` : 'float32 parameters',
      where: 'device',
      forward: masterDevice,
      backward: masterDevice,
      optimizer: masterDevice,
    },
    {
      id: 'params.compute-copy',
      category: 'params',
      label: `${input.precision.param} compute copy of the parameters`,
      where: 'device',
      forward: computeCopy,
      backward: computeCopy,
      optimizer: computeCopy,
    },
    {
      id: 'params.gathered',
      category: 'params',
      label: 'gathered units (current, prefetched, tied embedding)',
      where: 'device',
      forward: gatheredFwd,
      backward: gatheredBwd,
      optimizer: 0,
    },
    {
      id: 'grads.held',
      category: 'grads',
      label: gradsSharded ? `float32 gradient shard (1/${D})` : 'float32 gradients',
      where: 'device',
      forward: gradsPersistent,
      backward: gradsPersistent,
      optimizer: gradsPersistent,
    },
    {
      id: 'grads.unit',
      category: 'grads',
      label: gradsUnsynced
        ? 'whole-unit float32 gradients accumulated until the last micro-step (no_sync)'
        : 'whole-unit float32 gradients awaiting reduce-scatter',
      where: 'device',
      forward: gradsUnsynced,
      backward: gradsTransient,
      optimizer: 0,
    },
    {
      id: 'optimizer.adamw',
      category: 'optimizer',
      label: `AdamW moments${optSharded ? ` (1/${D})` : ''}`,
      where: 'device',
      forward: optimizerDevice,
      backward: optimizerDevice,
      optimizer: optimizerDevice,
    },
    {
      id: 'activations.timeline',
      category: 'activations',
      label: 'residual stream, saved block internals, head',
      where: 'device',
      forward: actFwd,
      backward: actBwd,
      optimizer: 0,
    },
    {
      id: 'workspace.backward',
      category: 'workspace',
      label:
        input.device === 'cuda'
          ? "backward scratch of one block and the backend's largest transient scratch"
          : 'backward scratch of one block',
      where: 'device',
      forward: 0,
      backward: z.workspace,
      optimizer: 0,
    },
    {
      id: 'comm.buffers',
      category: 'comm',
      label: `${input.precision.reduce} reduce and ${input.precision.param} gather buffers`,
      where: 'device',
      forward: commFwd,
      backward: commBwd,
      optimizer: 0,
    },
    {
      id: 'other.batches',
      category: 'other',
      label:
        input.device === 'cuda'
          ? "the token batch being computed (the data loader's ring is pinned host memory)"
          : `token batches (current and ${input.prefetchBatches ?? 2} prefetched)`,
      where: 'device',
      forward: batches,
      backward: batches,
      optimizer: batches,
    },
  ];
  const onHost = (id: string, category: TermSpec['category'], label: string, bytes: number): TermSpec => ({
    id,
    category,
    label,
    where: 'host',
    forward: bytes,
    backward: bytes,
    optimizer: bytes,
  });
  if (master - masterDevice > 0)
    terms.push(onHost('params.host', 'params', 'float32 parameter shard in host memory', master - masterDevice));
  if (gradsHeld - gradsPersistent > 0)
    terms.push(onHost('grads.host', 'grads', 'float32 gradient shard in host memory', gradsHeld - gradsPersistent));
  if (optimizer - optimizerDevice > 0)
    terms.push(onHost('optimizer.host', 'optimizer', 'AdamW moments in host memory', optimizer - optimizerDevice));
  const notes = st !== input.strategy ? [`${input.strategy} over one shard behaves as NO_SHARD`] : [];
  return {
    terms: terms.filter((t) => t.where === 'host' || t.forward || t.backward || t.optimizer),
    backwardSteps: 1,
    fragmentation: 0,
    notes,
  };
}
