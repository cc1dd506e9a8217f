// One transformer block of a PyTorch model, forward and backward, as the tensors autograd allocates
// and frees, in the order PyTorch runs them. The order matters as much as the sizes: the caching
// allocator (../caching-allocator.ts) reuses a freed block only for a request that fits it, so the
// reserved peak depends on which tensors are live when each request comes. The order here is the
// one PyTorch 2's dispatcher shows for the harness's GPT (test/reference/gpt.py), recorded storage
// by storage with test/reference/trace_allocations.py, with the CUDA kernels' own outputs and
// temporaries where they differ from the CPU's. The rules:
// - autograd keeps what an op saves for backward (Korthikanti et al. 2022 §4: a linear its input and
//   weight, LayerNorm its input and fp32 mean and rstd, GELU/SiLU their input, SDPA q, k, v, its
//   output and logsumexp); everything else dies when Python drops it: a projection's output at the
//   residual add, a module's argument when its forward returns;
// - a parameter's gradient is made by its op's backward (weight, then bias) and kept as .grad;
//   the residual stream's gradient is a new tensor at each add (the two branches' gradients summed);
// - under autocast a linear casts its bias, weight and (fp32) input to bf16 when it runs; the
//   weight and bias copies stay in autocast's cache until the autocast context exits, the weight's
//   longer when the linear saved it; in backward each copy's gradient is cast back to fp32;
// - checkpointed blocks (non-reentrant torch.utils.checkpoint) save nothing in forward, so their
//   tensors die as they would without autograd; backward recomputes the block up to its last saved
//   tensor (early stop: not the last projection) before its first gradient; selective
//   checkpointing keeps matmul and attention outputs and recomputes the rest.
import { bytesOf, type MemoryInput } from '../memory-input';
import { headDimOf, type ModelShape } from '../model-shape';

/**
 * How activations are typed. fp32; autocast: bf16 matmuls and attention on fp32 weights, with fp32
 * norms and residual stream (plain PyTorch / DDP); low: the model runs in bf16/fp16 throughout
 * (FSDP's param_dtype, DeepSpeed), norms keeping fp32 statistics.
 */
export type ComputeMode = 'fp32' | 'autocast' | 'low';

export function computeMode(input: MemoryInput, sharded: boolean): ComputeMode {
  // Weights loaded in bf16/fp16 (TRL's model_init_kwargs.dtype) run in that dtype, autocast or not.
  if (input.weights && input.weights.dtype !== 'float32') return 'low';
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
  /** Bytes per element of the residual stream and the norms' outputs (fp32 under autocast). */
  xr: number;
  /** fp32 statistics a norm saves per token (LayerNorm: mean and rstd; RMSNorm: rstd). */
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
  autocast: boolean;
  /** CUDA's attention kernels (their own gradient layout and temporaries) rather than the CPU's. */
  cuda: boolean;
  /** LoRA: the base model frozen, adapters on some linears (absent: every parameter trains). */
  lora?: BlockLora;
}

/**
 * A block of a LoRA model. The frozen base linears save no input (their weight needs no gradient),
 * so an input only an unadapted linear read dies in forward. Each adapter runs after its linear, as
 * PEFT's Linear.forward does: `result + lora_B(lora_A(dropout(x.to(A.dtype)))) * scaling`.
 */
export interface BlockLora {
  /** The adapted modules of each role (Llama's q, k and v are three modules of the role qkv). */
  adapted: Partial<Record<LinearName, Array<{ in: number; out: number }>>>;
  r: number;
  dropout: boolean;
  /** Bytes per element of the adapter weights; PEFT casts the adapter's input to their dtype. */
  adapterBytes: number;
  /** bitsandbytes: bytes of a role's weight dequantised for its matmul (forward and backward), 0 unquantised. */
  dequant: Partial<Record<LinearName, number>>;
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
    autocast: mode === 'autocast',
    cuda: input.device === 'cuda',
  };
}

export type ActivationTerm = 'saved' | 'recompute' | 'actGrads';

/** A block's linears by role: attention's input and output projections, the MLP's (gelu: fc, down; gated: gate, up, down). */
export type LinearName = 'qkv' | 'proj' | 'fc' | 'gate' | 'up' | 'down';

/** What the block replay needs from the step replay. */
export interface TensorLog {
  alloc(term: ActivationTerm, bytes: number): number;
  free(id: number): void;
  /**
   * A linear about to run: autocast's bf16 copies of its bias and weight, made now and cached until
   * autocast exits. Returns the weight copy's id when `saved` (the linear keeps it for backward and
   * the block frees it there), else 0 (autocast's exit frees it); 0 without autocast.
   */
  castLinear(linear: LinearName, term: 'autocast' | 'recompute', saved: boolean): number;
  /** Autocast's context exits (end of forward, end of a recompute): the cached copies nothing saved are freed. */
  exitAutocast(): void;
  /**
   * The gradients a linear's backward makes, weight then bias (`betweenWeightAndBias` runs between
   * them). Under autocast they are bf16 and their ids come back for `castGrads`; otherwise they are
   * the parameters' gradients and [] comes back.
   */
  linearGrads(linear: LinearName, betweenWeightAndBias?: () => void): number[];
  /** ToCopyBackward of autocast's copies: each bf16 gradient becomes the fp32 .grad. */
  castGrads(linear: LinearName, low: number[]): void;
  /** A norm's weight (and bias) gradients; `first` is the block's first norm. */
  normGrads(first: boolean): void;
  /** LoRA: the gradient of adapter `which` of the `index`-th adapted module of `linear`, kept as its .grad. */
  adapterGrad(linear: LinearName, index: number, which: 'A' | 'B'): void;
}

/** How a block is checkpointed: not at all, every_n (whole block), selective (matmul and attention outputs kept). */
export type BlockPolicy = 'none' | 'every' | 'selective';

/** A block's live tensors by name: what forward kept, then what recompute made. */
export type BlockKept = Map<string, number>;

/**
 * Forward of one block on input `x` (live; kept by the block's first norm or its checkpoint).
 * Returns the output (the next block's input) and what the block keeps for backward.
 */
export function blockForward(
  log: TensorLog,
  s: BlockSizes,
  x: number,
  policy: BlockPolicy,
): { out: number; kept: BlockKept } {
  const kept: BlockKept = new Map([['x', x]]);
  const out = run(log, s, kept, policy, 'forward');
  return { out, kept };
}

function dropper(log: TensorLog, kept: BlockKept): (name: string) => void {
  return (name) => {
    const id = kept.get(name);
    if (id === undefined) return;
    kept.delete(name);
    log.free(id);
  };
}

/**
 * The block's forward as PyTorch runs it. `forward` with policy none keeps what autograd saves;
 * every keeps nothing (each tensor dies when the code drops it); selective keeps matmul and
 * attention outputs. `recompute` (backward of a checkpointed block) makes what forward did not keep,
 * up to the last tensor backward needs; it returns 0.
 */
function run(
  log: TensorLog,
  s: BlockSizes,
  kept: BlockKept,
  policy: BlockPolicy,
  pass: 'forward' | 'recompute',
): number {
  const { t, C, qDim, kvDim, F, a, xr } = s;
  const e = s.experts;
  // Whether autograd's saves stay: without checkpointing, and in a recompute (it runs to make them).
  const saves = policy === 'none' || pass === 'recompute';
  // Selective checkpointing's forward keeps matmul and attention outputs; its recompute finds them kept.
  const sac = policy === 'selective';
  const reuse = sac && pass === 'recompute';
  const term: ActivationTerm = pass === 'recompute' ? 'recompute' : saves ? 'saved' : 'actGrads';
  const mmTerm: ActivationTerm = sac && pass === 'forward' ? 'saved' : term;
  const drop = dropper(log, kept);
  const put = (name: string, bytes: number, tm: ActivationTerm = term) => {
    kept.set(name, log.alloc(tm, bytes));
  };
  // A norm: its output (in the residual stream's dtype) and fp32 statistics, which stay only when saved.
  const norm = (name: string) => {
    put(`${name}Out`, t * C * xr);
    const parts = s.stats / 4;
    for (let i = 0; i < parts; i++) put(`${name}Stat${i}`, t * 4);
    if (!saves) for (let i = 0; i < parts; i++) drop(`${name}Stat${i}`);
  };
  // A linear: autocast's copies of its bias and weight, and of its input when that is fp32 (a norm's
  // output, which the linear saves in place of the norm output); then its output, unless selective
  // checkpointing kept it.
  const linear = (linear: LinearName, outName: string, outBytes: number, inFp32: boolean) => {
    const w = log.castLinear(linear, pass === 'recompute' ? 'recompute' : 'autocast', saves);
    if (w) kept.set(`${linear}W`, w);
    const cast = s.autocast && inFp32;
    if (cast) put(`${linear}In`, t * C * 2);
    // bitsandbytes dequantises the weight for the product and drops it after.
    const deq = s.lora?.dequant[linear] ? log.alloc('actGrads', s.lora.dequant[linear]!) : 0;
    if (!reuse) put(outName, outBytes, mmTerm);
    log.free(deq);
    // A frozen linear keeps no input: its cast dies unless its adapter keeps it.
    if (cast && (!saves || s.lora)) drop(`${linear}In`);
    if (s.lora?.adapted[linear]) adapterForward(log, s, kept, linear, inFp32 ? xr : a, saves, term);
  };
  /** Whether a frozen block still needs an input only some linears read: some of them carry an adapter. */
  const readBy = (...roles: LinearName[]) => !s.lora || roles.some((r) => s.lora!.adapted[r]);

  // Attention: norm, projection(s), attention, output projection.
  norm('ln1');
  if (s.fusedQkv) linear('qkv', 'qkv', t * (qDim + 2 * kvDim) * a, true);
  else {
    linear('qkv', 'q', t * qDim * a, true);
    if (!reuse) {
      put('k', t * kvDim * a, mmTerm);
      put('v', t * kvDim * a, mmTerm);
    }
  }
  if (s.rotary && !reuse) {
    // q·cos + rotate_half(q)·sin makes new q and k for attention; separate projections' outputs die.
    const half = log.alloc('actGrads', t * qDim * a);
    put('qRot', t * qDim * a);
    put('kRot', t * kvDim * a);
    log.free(half);
    if (!s.fusedQkv) for (const n of ['q', 'k']) drop(n);
  }
  if (!reuse) {
    if (s.eager) {
      // softmax(q kᵀ) is kept whole (batch · heads · s²); the output is transposed back by a copy.
      const probs = s.batch * s.H * s.seq * s.seq * a;
      const scores = log.alloc('actGrads', probs);
      put('probs', probs, mmTerm);
      log.free(scores);
      if (s.dropout) {
        put('probsMask', s.batch * s.H * s.seq * s.seq);
        put('probsDropped', probs);
      }
      const pv = log.alloc('actGrads', t * qDim * a);
      put('attnOut', t * qDim * a, mmTerm);
      log.free(pv);
    } else {
      // Flash and memory-efficient kernels write (B, T, H, D): the transpose back is free. The
      // logsumexp is fp32 per head and row (rows padded to 32 by the memory-efficient kernel).
      put('attnOut', t * qDim * a, mmTerm);
      put('lse', s.batch * s.H * Math.ceil(s.seq / 32) * 32 * 4, mmTerm);
      if (!saves && !sac) drop('lse');
    }
  }
  linear('proj', 'proj', t * C * a, false);
  if (s.dropout && !reuse) put('projMask', t * C);
  // attn.forward returns: its argument (the norm output) and, when nothing saved them, q/k/v and the attention output die.
  if (!saves && !sac)
    for (const n of ['qkv', 'q', 'k', 'v', 'qRot', 'kRot', 'attnOut', 'probs', 'probsMask', 'probsDropped']) drop(n);
  if (!saves || s.autocast || !readBy('qkv')) drop('ln1Out');
  // x + proj(…): a new residual tensor; the projection's output dies unless selective checkpointing's forward keeps it.
  put('x1', t * C * xr);
  if (!sac || pass === 'recompute') drop('proj');

  // MLP: norm, up projection(s), activation, down projection.
  norm('ln2');
  if (s.swiglu) {
    // down(act(gate(x)) · up(x)): act saves gate, the product saves act and up.
    linear('gate', 'gate', e * t * F * a, true);
    put('act', e * t * F * a);
    if (!saves && !sac) drop('gate');
    linear('up', 'up', e * t * F * a, true);
    put('prod', e * t * F * a);
    if (!saves) drop('act');
    if (!saves && !sac) drop('up');
  } else {
    linear('fc', 'fc', e * t * F * a, true);
    put('act', e * t * F * a);
    if (!saves && !sac) drop('fc');
  }
  if (pass === 'recompute') {
    // Early stop: the recompute ends once the down projection's saved input exists; autocast has
    // already cast its weight (saved) and bias, and its exit frees what nothing saved.
    const w = log.castLinear('down', 'recompute', true);
    if (w) kept.set('downW', w);
    // Its adapter's saved tensors are needed too: the recompute runs on through lora_A.
    if (s.lora?.adapted.down) adapterForward(log, s, kept, 'down', a, true, 'recompute');
    log.exitAutocast();
    if (s.autocast) drop('ln2Out');
    return 0;
  }
  linear('down', 'down', t * C * a, false);
  if (s.dropout) put('downMask', t * C);
  if (!saves) for (const n of ['act', 'prod']) drop(n);
  // An unadapted frozen down projection does not keep its input (the product; GELU's output).
  if (!readBy('down')) drop(s.swiglu ? 'prod' : 'act');
  if (!saves || s.autocast || !readBy('gate', 'up', 'fc')) drop('ln2Out');
  const out = log.alloc('saved', t * C * xr);
  if (!sac) drop('down');
  if (!saves) drop('x1');
  return out;
}

/**
 * Backward of one block, given the gradient of its output `g` (live). Recomputes a checkpointed
 * block first, frees everything the block kept and `g`, and returns the gradient of its input.
 */
export function blockBackward(log: TensorLog, s: BlockSizes, kept: BlockKept, policy: BlockPolicy, g: number): number {
  const { t, C, qDim, kvDim, F, a, xr } = s;
  const e = s.experts;
  const drop = dropper(log, kept);
  // The residual add casts its gradient to the branch's dtype (autocast: bf16) before the branch's backward starts.
  let gCast = s.autocast ? log.alloc('actGrads', t * C * a) : 0;
  if (policy !== 'none') run(log, s, kept, policy, 'recompute');

  // A linear's backward: its input's gradient, then its weight's and bias's; the gradient it got
  // (`consumed`), its saved input and weight copy go; autocast casts the input's gradient back to fp32
  // when the input was cast, then the parameters' gradients. What a recompute made is held only by
  // the node while it runs, so it goes before the bias's gradient (a node of its own, the bias's
  // expand); what forward saved goes when autograd releases the node, after it.
  const recomputed = policy !== 'none';
  const linearBackward = (
    linear: LinearName,
    inBytes: number,
    savedInput: string | undefined,
    inCast: boolean,
    consumed: () => void,
  ) => {
    const release = () => {
      if (savedInput) drop(savedInput);
      drop(`${linear}W`);
    };
    // Autograd runs the adapter's nodes first (made after the base product); their input gradient is
    // added into the base linear's.
    const fromAdapters = s.lora?.adapted[linear] ? adapterBackward(log, s, kept, linear) : [];
    const deq = s.lora?.dequant[linear] ? log.alloc('actGrads', s.lora.dequant[linear]!) : 0;
    const gIn = log.alloc('actGrads', inBytes);
    log.free(deq);
    for (const id of fromAdapters) log.free(id);
    const low = log.linearGrads(linear, recomputed ? release : undefined);
    consumed();
    release();
    let g32 = 0;
    if (inCast) {
      g32 = log.alloc('actGrads', inBytes * 2);
      log.free(gIn);
    }
    log.castGrads(linear, low);
    return g32 || gIn;
  };

  // MLP: down projection, activation, up projection(s), norm.
  drop('downMask');
  const gAct = linearBackward('down', e * t * F * a, s.swiglu ? 'prod' : 'act', false, () => {
    if (gCast) log.free(gCast);
  });
  let gLn2: number;
  if (s.swiglu) {
    // prod = act(gate) · up: the product's backward (both factors' gradients; act and up go), the
    // activation's (gate goes), then the two projections, up's first (it ran last), whose input
    // gradients are summed.
    const gA = log.alloc('actGrads', e * t * F * a);
    const gUp = log.alloc('actGrads', e * t * F * a);
    log.free(gAct);
    drop('act');
    drop('up');
    const gGate = log.alloc('actGrads', e * t * F * a);
    log.free(gA);
    drop('gate');
    const fromUp = linearBackward('up', t * C * a, s.autocast ? 'upIn' : undefined, s.autocast, () => log.free(gUp));
    const fromGate = linearBackward('gate', t * C * a, s.autocast ? 'gateIn' : 'ln2Out', s.autocast, () =>
      log.free(gGate),
    );
    gLn2 = log.alloc('actGrads', t * C * xr);
    log.free(fromUp);
    log.free(fromGate);
  } else {
    const gFc = log.alloc('actGrads', e * t * F * a);
    log.free(gAct);
    drop('fc');
    gLn2 = linearBackward('fc', t * C * a, s.autocast ? 'fcIn' : 'ln2Out', s.autocast, () => log.free(gFc));
  }
  const g1 = normBackward(log, s, kept, 'ln2', gLn2, 'x1', false);
  // The residual's gradient: the output's and the norm branch's, summed into a new tensor.
  const r1 = log.alloc('actGrads', t * C * xr);
  log.free(g);
  log.free(g1);

  // Attention: output projection, attention, q/k/v projection(s), norm.
  gCast = s.autocast ? log.alloc('actGrads', t * C * a) : 0;
  drop('projMask');
  const gAttn = linearBackward('proj', t * qDim * a, undefined, false, () => {
    if (gCast) log.free(gCast);
  });
  let gQkv: number[];
  if (s.eager) {
    drop('attnOut');
    const probs = s.batch * s.H * s.seq * s.seq * a;
    const gProbs = log.alloc('actGrads', probs);
    const gV = log.alloc('actGrads', t * kvDim * a);
    log.free(gAttn);
    drop('probsDropped');
    drop('probsMask');
    const gScores = log.alloc('actGrads', probs);
    log.free(gProbs);
    drop('probs');
    const gQ = log.alloc('actGrads', t * qDim * a);
    const gK = log.alloc('actGrads', t * kvDim * a);
    log.free(gScores);
    gQkv = gradOfQkv(log, s, kept, [gQ, gK, gV]);
  } else {
    // SDPA's backward. On CUDA the memory-efficient kernel (fp32) writes dq, dk, dv into one chunk
    // laid out as the fused projection's output when q, k, v are views of it (attention_backward.cu);
    // flash (bf16/fp16) makes three, plus its fp32 row sums and dq accumulator (sequence rounded up
    // to 128), freed before it returns. The CPU kernel makes three and nothing else.
    const chunk = s.cuda && a === 4 && s.fusedQkv && !s.rotary;
    const grads = chunk
      ? [log.alloc('actGrads', t * (qDim + 2 * kvDim) * a)]
      : [
          log.alloc('actGrads', t * qDim * a),
          log.alloc('actGrads', t * kvDim * a),
          log.alloc('actGrads', t * kvDim * a),
        ];
    const rows = a === 4 ? Math.ceil(s.seq / 32) * 32 : Math.ceil(s.seq / 128) * 128;
    const rowSums = s.cuda ? log.alloc('actGrads', s.batch * s.H * rows * 4) : 0;
    const dqAccum = s.cuda && a !== 4 ? log.alloc('actGrads', s.batch * rows * qDim * 4) : 0;
    log.free(dqAccum);
    log.free(rowSums);
    log.free(gAttn);
    gQkv = gradOfQkv(log, s, kept, grads, () => {
      drop('lse');
      drop('attnOut');
    });
  }
  const gLn1 = linearBackward('qkv', t * C * a, s.autocast ? 'qkvIn' : 'ln1Out', s.autocast, () =>
    gQkv.forEach((id) => log.free(id)),
  );
  // The block input goes with the first norm's backward; so does the down projection's output that
  // selective checkpointing kept and nothing read (the checkpoint frame ends).
  const g2 = normBackward(log, s, kept, 'ln1', gLn1, 'x', true, ['down']);
  const r2 = log.alloc('actGrads', t * C * xr);
  log.free(r1);
  log.free(g2);
  return r2;
}

/**
 * From the gradients attention returned for q, k, v to what the projection(s) take: attention's
 * saved inputs go (then `afterAttention`'s), rotary positions are undone, and a fused projection's
 * split is undone by a concatenation into a new tensor.
 */
function gradOfQkv(
  log: TensorLog,
  s: BlockSizes,
  kept: BlockKept,
  grads: number[],
  afterAttention?: () => void,
): number[] {
  const { t, qDim, kvDim, a } = s;
  const drop = dropper(log, kept);
  for (const n of ['qkv', 'qRot', 'kRot', 'v']) drop(n);
  afterAttention?.();
  if (s.rotary) {
    // The rotation's backward: new gradients of q and k.
    const gQ = log.alloc('actGrads', t * qDim * a);
    const gK = log.alloc('actGrads', t * kvDim * a);
    for (const id of grads.slice(0, 2)) log.free(id);
    grads = [gQ, gK, ...grads.slice(2)];
  }
  for (const n of ['q', 'k']) drop(n);
  if (!s.fusedQkv) return grads; // three projections: each takes its own gradient
  const gQkv = log.alloc('actGrads', t * (qDim + 2 * kvDim) * a);
  for (const id of grads) log.free(id);
  return [gQkv];
}

/** A norm's backward: its input's gradient and its parameters'; the gradient it got, its saved input and statistics go. */
function normBackward(
  log: TensorLog,
  s: BlockSizes,
  kept: BlockKept,
  name: string,
  gOut: number,
  input: string,
  first: boolean,
  also: string[] = [],
): number {
  const gIn = log.alloc('actGrads', s.t * s.C * s.xr);
  log.normGrads(first);
  log.free(gOut);
  const drop = dropper(log, kept);
  for (const n of [`${name}Stat0`, `${name}Stat1`, ...also, input]) drop(n);
  return gIn;
}

/**
 * The adapters of `role` after its frozen linear, as PEFT's Linear.forward runs them for each adapted
 * module: `x.to(lora_A.weight.dtype)` (a copy when the dtypes differ), dropout (its mask and output),
 * autocast's bf16 copy of an fp32 input to lora_A, lora_A's output (which lora_B saves), lora_B's
 * output, its product with the scaling, and the sum with the base output (which then replaces it:
 * the same size). lora_A keeps its input (the block's own tensor when nothing was copied, which the
 * block then keeps); in a checkpointed forward nothing stays.
 */
function adapterForward(
  log: TensorLog,
  s: BlockSizes,
  kept: BlockKept,
  role: LinearName,
  inBytes: number,
  saves: boolean,
  term: ActivationTerm,
): void {
  const L = s.lora!;
  const { t } = s;
  (L.adapted[role] ?? []).forEach((mod, i) => {
    const key = `${role}.${i}`;
    const temporaries: number[] = [];
    const hold = (name: string, id: number) => {
      if (saves) kept.set(`${key}.${name}`, id);
      else temporaries.push(id);
    };
    let bytes = inBytes;
    let input = 0;
    if (L.adapterBytes !== inBytes) {
      input = log.alloc(term, t * mod.in * L.adapterBytes);
      bytes = L.adapterBytes;
    }
    if (L.dropout) {
      hold('mask', log.alloc(term, t * mod.in));
      const dropped = log.alloc(term, t * mod.in * bytes);
      log.free(input);
      input = dropped;
    }
    if (s.autocast && bytes === 4) {
      const low = log.alloc(term, t * mod.in * 2);
      log.free(input);
      input = low;
    }
    if (input) hold('in', input);
    const ab = s.autocast ? 2 : L.adapterBytes;
    hold('aOut', log.alloc(term, t * L.r * ab));
    const bOut = log.alloc('actGrads', t * mod.out * ab);
    const scaled = log.alloc('actGrads', t * mod.out * ab);
    log.free(bOut);
    const sum = log.alloc('actGrads', t * mod.out * s.a);
    log.free(scaled);
    log.free(sum);
    for (const id of temporaries) log.free(id);
  });
}

/**
 * Backward of the adapters of `role`: the scaling's, lora_B's (its input's gradient, then its
 * weight's), lora_A's and dropout's; what forward kept for them goes. Returns the gradients of their
 * inputs, which autograd then adds into the base linear's.
 */
function adapterBackward(log: TensorLog, s: BlockSizes, kept: BlockKept, role: LinearName): number[] {
  const L = s.lora!;
  const { t } = s;
  const drop = dropper(log, kept);
  const ab = s.autocast ? 2 : L.adapterBytes;
  return (L.adapted[role] ?? []).map((mod, i) => {
    const key = `${role}.${i}`;
    const gScaled = log.alloc('actGrads', t * mod.out * ab);
    const gA = log.alloc('actGrads', t * L.r * ab);
    log.adapterGrad(role, i, 'B');
    log.free(gScaled);
    drop(`${key}.aOut`);
    let g = log.alloc('actGrads', t * mod.in * ab);
    log.adapterGrad(role, i, 'A');
    log.free(gA);
    drop(`${key}.in`);
    if (L.dropout) {
      const gIn = log.alloc('actGrads', t * mod.in * ab);
      log.free(g);
      drop(`${key}.mask`);
      g = gIn;
    }
    return g;
  });
}
