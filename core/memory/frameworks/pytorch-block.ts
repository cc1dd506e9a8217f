// One transformer block of a PyTorch model, forward and backward side by side, as the tensors
// autograd allocates and frees: what each op saves for its backward, which temporaries die at once,
// and which gradients its backward allocates. Used by the step replay (./pytorch-replay.ts).
// What is saved follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4) for the ops PyTorch actually runs: nn.Linear saves its input, LayerNorm
// its input and fp32 mean/rstd (RMSNorm: rstd), GELU and SiLU their input, the gated product both
// factors, F.scaled_dot_product_attention q, k, v, its output and an fp32 logsumexp per head and
// token (rows padded to 32); residual adds save nothing.
import { bytesOf, type MemoryInput } from '../memory-input';
import { headDimOf, type ModelShape } from '../model-shape';

/**
 * How activations are typed. fp32; autocast: bf16 matmuls and attention on fp32 weights, with fp32
 * norms and residual stream (plain PyTorch / DDP); low: the model runs in bf16/fp16 throughout
 * (FSDP's param_dtype, DeepSpeed), norms keeping fp32 statistics.
 */
export type ComputeMode = 'fp32' | 'autocast' | 'low';

export function computeMode(input: MemoryInput, sharded: boolean): ComputeMode {
  if (bytesOf(input.precision.param) === 4 && bytesOf(input.precision.activation) === 4) return 'fp32';
  return sharded || input.framework === 'deepspeed' ? 'low' : 'autocast';
}

export interface BlockSizes {
  t: number;
  C: number;
  qDim: number;
  kvDim: number;
  F: number;
  H: number;
  /** Bytes per element of a matmul or attention output. */
  a: number;
  /** Bytes per element of the residual stream (fp32 under autocast). */
  xr: number;
  /** fp32 statistics a norm saves per token. */
  stats: number;
  /** One fused q/k/v projection (GPT-2, NeoX, Phi) or three (Llama family). */
  fusedQkv: boolean;
  rotary: boolean;
  eager: boolean;
  dropout: boolean;
  batch: number;
  seq: number;
  /** Experts each token runs through (1 without MoE). */
  experts: number;
  swiglu: boolean;
}

export function blockSizes(input: MemoryInput, mode: ComputeMode): BlockSizes {
  const m: ModelShape = input.model;
  const hd = headDimOf(m);
  const a = mode === 'fp32' ? 4 : 2;
  return {
    t: input.microBatch * input.seqLen,
    C: m.dModel,
    qDim: m.nHeads * hd,
    kvDim: m.nKvHeads * hd,
    F: m.ffnHidden,
    H: m.nHeads,
    a,
    xr: mode === 'low' ? a : 4,
    stats: m.norm === 'layernorm' ? 8 : 4,
    fusedQkv: m.mlp === 'gelu',
    rotary: m.positionEmbeddings === 0,
    eager: input.attention === 'eager',
    dropout: input.dropout > 0,
    batch: input.microBatch,
    seq: input.seqLen,
    experts: m.experts?.perToken ?? 1,
    swiglu: m.mlp === 'swiglu',
  };
}

/** What the block replay needs from the step replay. */
export interface TensorLog {
  alloc(term: ActivationTerm, bytes: number): number;
  free(id: number): void;
  /** The weight gradients of a block's attention (`attention`) or MLP linears, where they live. */
  weightGrads(part: 'attention' | 'mlp'): void;
}

export type ActivationTerm = 'saved' | 'recompute' | 'actGrads';

/**
 * A tensor the block keeps for backward; `mm` ones (matmul and attention outputs) survive selective
 * checkpointing, and `sacOnly` ones (projection outputs only a residual add reads) only exist because
 * selective checkpointing keeps them.
 */
interface Kept {
  id: number;
  mm: boolean;
  bytes: number;
  sacOnly?: boolean;
}

export type BlockKept = Map<string, Kept>;

/**
 * Forward of one block on input `x` (live; the block keeps it, as its first norm or its checkpoint
 * does). Returns the output (the next block's input) and what the block keeps.
 */
export function blockForward(log: TensorLog, s: BlockSizes, x: number, term: 'saved' | 'recompute', selective: boolean): { out: number; kept: BlockKept } {
  const kept: BlockKept = new Map([['x', { id: x, mm: false, bytes: 0 }]]);
  const keep = (name: string, bytes: number, mm: boolean) => {
    const id = log.alloc(term, bytes);
    kept.set(name, { id, mm, bytes });
    return id;
  };
  const { t, qDim, kvDim, F, a } = s;
  norm(log, s, keep, 'ln1');
  if (s.fusedQkv) keep('qkv', t * (qDim + 2 * kvDim) * a, true);
  else {
    keep('q', t * qDim * a, true);
    keep('k', t * kvDim * a, true);
    keep('v', t * kvDim * a, true);
  }
  if (s.rotary) {
    // q·cos + rotate_half(q)·sin makes new q and k for attention; separate projections' outputs die.
    const half = log.alloc('actGrads', t * qDim * a);
    keep('qRot', t * qDim * a, false);
    keep('kRot', t * kvDim * a, false);
    log.free(half);
    if (!s.fusedQkv) for (const n of ['q', 'k']) drop(log, kept, n);
  }
  if (s.eager) {
    // softmax(q kᵀ) is kept whole (batch · heads · s²); the output is transposed back by a copy.
    const probs = s.batch * s.H * s.seq * s.seq * a;
    const scores = log.alloc('actGrads', probs);
    keep('probs', probs, true);
    log.free(scores);
    if (s.dropout) {
      keep('probsMask', s.batch * s.H * s.seq * s.seq, false);
      keep('probsDropped', probs, false);
    }
    const pv = log.alloc('actGrads', t * qDim * a);
    keep('attnOut', t * qDim * a, false);
    log.free(pv);
  } else {
    // Flash and memory-efficient kernels write (B, T, H, D): the transpose back is free.
    keep('attnOut', t * qDim * a, true);
    keep('lse', s.batch * s.H * Math.ceil(s.seq / 32) * 32 * 4, true);
  }
  const x1 = residual(log, s, keep, kept, 'proj', term, selective);
  kept.set('x1', { id: x1, mm: false, bytes: s.t * s.C * s.xr });
  norm(log, s, keep, 'ln2');
  const e = s.experts;
  keep(s.swiglu ? 'gate' : 'fc', e * t * F * a, true);
  if (s.swiglu) keep('up', e * t * F * a, true);
  keep('act', e * t * F * a, false);
  if (s.swiglu) keep('prod', e * t * F * a, false);
  const out = residual(log, s, keep, kept, 'down', term, selective);
  return { out, kept };
}

/** A norm: its statistics and its output as the next linear keeps it (autocast: the bf16 cast of an fp32 output). */
function norm(log: TensorLog, s: BlockSizes, keep: (name: string, bytes: number, mm: boolean) => number, name: string): void {
  keep(`${name}Stats`, s.t * s.stats, false);
  if (s.a === s.xr) {
    keep(`${name}Out`, s.t * s.C * s.a, false);
    return;
  }
  const fp32 = log.alloc('actGrads', s.t * s.C * s.xr);
  keep(`${name}Out`, s.t * s.C * s.a, false);
  log.free(fp32);
}

/** An output projection and the residual add after it (x + proj(…) is a new residual tensor). */
function residual(log: TensorLog, s: BlockSizes, keep: (name: string, bytes: number, mm: boolean) => number, kept: BlockKept, name: string, term: 'saved' | 'recompute', selective: boolean): number {
  // Nothing saves the projection's output, but selective checkpointing keeps every matmul output.
  const proj = keep(name, s.t * s.C * s.a, true);
  kept.get(name)!.sacOnly = true;
  if (s.dropout) keep(`${name}Mask`, s.t * s.C, false);
  const sum = log.alloc(term, s.t * s.C * s.xr);
  if (!selective) {
    log.free(proj);
    kept.delete(name);
  }
  return sum;
}

function drop(log: TensorLog, kept: BlockKept, name: string): void {
  const k = kept.get(name);
  if (!k) return;
  log.free(k.id);
  kept.delete(name);
}

/**
 * Frees what a checkpointing policy does not keep at the end of a block's forward: everything but
 * the input (every_n), or everything but the input and the matmul/attention outputs (selective).
 * Returns what must be recomputed in backward.
 */
export function dropForCheckpoint(log: TensorLog, kept: BlockKept, policy: 'every' | 'selective'): Dropped {
  const dropped: Dropped = [];
  for (const [name, k] of [...kept]) {
    if (name === 'x' || (policy === 'selective' && k.mm)) continue;
    drop(log, kept, name);
    if (!k.sacOnly) dropped.push({ name, bytes: k.bytes, mm: k.mm });
  }
  return dropped;
}

export type Dropped = Array<{ name: string; bytes: number; mm: boolean }>;

/** A checkpointed block's forward again, in its backward: what the policy dropped comes back. */
export function recompute(log: TensorLog, kept: BlockKept, dropped: Dropped): void {
  for (const d of dropped) kept.set(d.name, { id: log.alloc('recompute', d.bytes), mm: d.mm, bytes: d.bytes });
}

/**
 * Backward of one block, given the gradient of its output `g` (live, accumulated in place into the
 * gradient of its input, so the same id on return). Frees everything the block kept.
 */
export function blockBackward(log: TensorLog, s: BlockSizes, kept: BlockKept): void {
  const { t, C, qDim, kvDim, F, a } = s;
  const free = (name: string) => drop(log, kept, name);
  const e = s.experts;
  // MLP: down projection (the residual add casts the gradient to the branch dtype first).
  const cast = s.xr !== s.a ? log.alloc('actGrads', t * C * a) : 0;
  free('downMask');
  const gHidden = log.alloc('actGrads', e * t * F * a);
  if (cast) log.free(cast);
  free('down');
  let gIn: number;
  if (s.swiglu) {
    // prod = act(gate) · up: gradients of both factors, then of gate through the activation.
    const gAct = log.alloc('actGrads', e * t * F * a);
    const gUp = log.alloc('actGrads', e * t * F * a);
    log.free(gHidden);
    free('prod');
    const gGate = log.alloc('actGrads', e * t * F * a);
    log.free(gAct);
    free('act');
    free('up');
    gIn = log.alloc('actGrads', t * C * a);
    log.free(gUp);
    log.free(gGate);
    free('gate');
  } else {
    const gFc = log.alloc('actGrads', e * t * F * a);
    log.free(gHidden);
    free('act');
    gIn = log.alloc('actGrads', t * C * a);
    log.free(gFc);
    free('fc');
  }
  log.weightGrads('mlp');
  normBackward(log, s, free, 'ln2', gIn);
  free('x1');
  // Attention: output projection, attention, q/k/v projections.
  const cast2 = s.xr !== s.a ? log.alloc('actGrads', t * C * a) : 0;
  free('projMask');
  const gAttn = log.alloc('actGrads', t * qDim * a);
  if (cast2) log.free(cast2);
  free('proj');
  let gQ: number;
  let gK: number;
  let gV: number;
  if (s.eager) {
    free('attnOut');
    const probs = s.batch * s.H * s.seq * s.seq * a;
    const gProbs = log.alloc('actGrads', probs);
    gV = log.alloc('actGrads', t * kvDim * a);
    log.free(gAttn);
    free('probsDropped');
    free('probsMask');
    const gScores = log.alloc('actGrads', probs);
    log.free(gProbs);
    free('probs');
    gQ = log.alloc('actGrads', t * qDim * a);
    gK = log.alloc('actGrads', t * kvDim * a);
    log.free(gScores);
  } else {
    // dq, dk, dv and the kernel's fp32 row sums; FlashAttention-2 (bf16/fp16) also accumulates dq
    // in fp32, with the sequence rounded up to 128.
    gQ = log.alloc('actGrads', t * qDim * a);
    gK = log.alloc('actGrads', t * kvDim * a);
    gV = log.alloc('actGrads', t * kvDim * a);
    const rows = a === 4 ? Math.ceil(s.seq / 32) * 32 : Math.ceil(s.seq / 128) * 128;
    const rowSums = log.alloc('actGrads', s.batch * s.H * rows * 4);
    const dqAccum = a === 4 ? 0 : log.alloc('actGrads', s.batch * rows * qDim * 4);
    log.free(gAttn);
    log.free(dqAccum);
    log.free(rowSums);
    free('attnOut');
    free('lse');
  }
  if (s.rotary) {
    const q = log.alloc('actGrads', t * qDim * a);
    const k = log.alloc('actGrads', t * kvDim * a);
    log.free(gQ);
    log.free(gK);
    free('qRot');
    free('kRot');
    gQ = q;
    gK = k;
  }
  for (const n of ['q', 'k', 'v', 'qkv']) free(n);
  let gQkv = 0;
  if (s.fusedQkv) {
    // The split's backward concatenates dq, dk, dv into one gradient of the fused output.
    gQkv = log.alloc('actGrads', t * (qDim + 2 * kvDim) * a);
    for (const id of [gQ, gK, gV]) log.free(id);
  }
  const gLn = log.alloc('actGrads', t * C * a);
  if (gQkv) log.free(gQkv);
  else for (const id of [gQ, gK, gV]) log.free(id);
  log.weightGrads('attention');
  normBackward(log, s, free, 'ln1', gLn);
  free('x');
}

/** A norm's backward: its input gradient (through fp32 when autocast cast its output), added in place to the residual gradient. */
function normBackward(log: TensorLog, s: BlockSizes, free: (name: string) => void, name: string, gOut: number): void {
  free(`${name}Out`);
  let grad = gOut;
  if (s.a !== s.xr) {
    grad = log.alloc('actGrads', s.t * s.C * s.xr);
    log.free(gOut);
  }
  const gIn = log.alloc('actGrads', s.t * s.C * s.xr);
  log.free(grad);
  free(`${name}Stats`);
  log.free(gIn);
}
