// A PyTorch training run replayed tensor by tensor: the model loaded, then steps of forward, loss,
// backward and AdamW(foreach) with zero_grad(set_to_none=True), as plain PyTorch (autocast for bf16),
// DDP, ZeroRedundancyOptimizer or FSDP2 (fully_shard per block and at the root) run them. Every
// allocation and free goes to a sink with the term it belongs to; the sink is the allocator replay
// (./caching-allocator.ts) and the term bookkeeping (./pytorch.ts). The loop is the one
// test/reference/measure_memory.py measures, so each choice below can be checked against a GPU.
import { bytesOf, shardGroupSize, worldSize, type MemoryInput } from '../memory-input';
import { storedBytes } from '../lora';
import { parameterTensors, type ParameterTensors } from '../model-shape';
import {
  blockBackward,
  blockForward,
  blockSizes,
  computeMode,
  type BlockKept,
  type BlockPolicy,
  type BlockSizes,
  type ComputeMode,
  type LinearName,
  type TensorLog,
} from './pytorch-block';
import { Fsdp2Units, type Unit } from './pytorch-replay-fsdp';
import { loraHoldings, type LoraHoldings } from './pytorch-replay-lora';

export const REPLAY_TERMS = [
  'params',
  'autocast',
  'grads',
  'gradsUnsharded',
  'optimizer',
  'optimizerStep',
  'saved',
  'recompute',
  'actGrads',
  'logits',
  'gathered',
  'reduceScatter',
  'ddpBuckets',
  'cublas',
  'batch',
] as const;
export type ReplayTerm = (typeof REPLAY_TERMS)[number];
export type ReplayPhase = 'setup' | 'forward' | 'backward' | 'optimizer';

export interface ReplaySink {
  /** A tensor of `bytes` on the device (stream 1: FSDP's reduce-scatter stream) or, with `host`, in host memory. */
  alloc(id: number, bytes: number, term: ReplayTerm, stream: number, host: boolean): void;
  free(id: number): void;
  phase(step: number, phase: ReplayPhase): void;
}

const MiB = 1024 * 1024;

/** cuBLAS's workspace per handle: PyTorch's CUBLAS_WORKSPACE_CONFIG default, ":4096:8" on compute capability 9.x/10.x, else ":4096:2:16:8". */
export function cublasWorkspaceBytes(computeCapability: number | undefined): number {
  const major = Math.floor(computeCapability ?? 9);
  return major === 9 || major === 10 ? 4096 * 1024 * 8 : (4096 * 2 + 16 * 8) * 1024;
}
/** cuBLASLt's workspace (CUBLASLT_WORKSPACE_SIZE default 1024 KiB), one per process. */
export const CUBLASLT_WORKSPACE_BYTES = 1 * MiB;

/** Replays model loading and up to `steps` optimizer steps of `input` into `sink`; `settled(step)` can end it after a step. */
export function replayTraining(
  input: MemoryInput,
  sink: ReplaySink,
  steps: number,
  settled?: (step: number) => boolean,
): void {
  new Replay(input, sink).run(steps, settled);
}

class Replay implements TensorLog {
  private nextId = 1;
  private readonly mode: ComputeMode;
  private s: BlockSizes;
  private readonly t: ParameterTensors;
  private readonly fsdp: boolean;
  private readonly G: number;
  private readonly L: number;
  /** Bytes of a gathered parameter / its unsharded gradient (FSDP's param_dtype). */
  private readonly p: number;
  private readonly r: number;
  private readonly units: Unit[] = [];
  private readonly optimizerState: number[] = [];
  /** Plain parameters' gradients (.grad), by tensor key; FSDP's live in each unit. */
  private readonly grads = new Map<string, number>();
  /** autocast's cache: bf16 copies of weights and biases nothing saved, freed when autocast exits. */
  private autocastCache: number[] = [];
  /** FSDP2's units (undefined without FSDP). */
  private readonly fsdpUnits?: Fsdp2Units;
  private readonly workspaces = new Set<'forward' | 'backward'>();
  private block = 0;
  private micro = 0;
  /** Bytes per element of the parameters as loaded (and of their gradients and AdamW states): fp32, or the bf16/fp16 the config loads. */
  private readonly wb: number;
  /** LoRA (one process or DDP): the base frozen; only adapters and modules_to_save train. */
  private readonly lora?: LoraHoldings;

  constructor(
    private readonly input: MemoryInput,
    private readonly sink: ReplaySink,
  ) {
    const st = input.strategy;
    this.fsdp = st === 'FULL_SHARD' || st === 'SHARD_GRAD_OP' || st === 'HYBRID_SHARD';
    this.mode = computeMode(input, this.fsdp);
    this.s = blockSizes(input, this.mode);
    this.t = parameterTensors(input.model);
    this.G = this.fsdp ? shardGroupSize(input) : 1;
    this.L = input.model.nLayers;
    this.wb = storedBytes(input.weights);
    this.p = this.mode === 'low' ? Math.min(bytesOf(input.precision.param), this.wb) : 4;
    this.r = this.fsdp ? bytesOf(input.precision.reduce) : 4;
    // LoRA is replayed for one process, DDP and FSDP2 (not over a quantised base or modules_to_save:
    // there the estimate stays full fine-tuning and the reader names LoRA as not modelled).
    this.lora = loraHoldings(input, this.t, this.wb, this.fsdp);
    if (this.lora) this.s = { ...this.s, lora: this.lora.block };
    if (this.fsdp) this.fsdpUnits = new Fsdp2Units(this, this.units, input, this.G, this.p, this.r, this.wb);
  }

  // TensorLog
  alloc(term: ReplayTerm, bytes: number, stream = 0, host = false): number {
    if (!(bytes > 0)) return 0;
    const id = this.nextId++;
    this.sink.alloc(id, bytes, term, stream, host);
    return id;
  }

  free(id: number): void {
    if (id) this.sink.free(id);
  }

  run(steps: number, settled?: (step: number) => boolean): void {
    this.sink.phase(0, 'setup');
    this.setup();
    for (let step = 1; step <= steps; step++) {
      for (this.micro = 0; this.micro < this.input.gradAccumSteps; this.micro++) {
        this.sink.phase(step, 'forward');
        const fwd = this.forward();
        this.sink.phase(step, 'backward');
        this.backward(fwd);
      }
      this.sink.phase(step, 'optimizer');
      this.optimizerStep(step === 1);
      if (settled?.(step)) break;
    }
  }

  /** cuBLAS workspaces (one per thread that runs matrix products: the caller's and autograd's), parameters, the batch. */
  private setup(): void {
    // A process that already ran matrix products (on this thread and autograd's) has its cuBLAS
    // workspaces before the model; a fresh one makes them at its first forward and backward matmul.
    const history = this.input.cublasHistory;
    if (history?.forward) this.cublasWorkspaces('forward');
    if (history?.backward) {
      // Carved from the front of a segment of the size it was carved from, the rest cached.
      const segment = history.backwardSegmentBytes ? this.alloc('cublas', history.backwardSegmentBytes) : 0;
      this.free(segment);
      this.cublasWorkspaces('backward');
    }
    // model.to(device): every parameter in module order (embeddings, blocks, final norm, head), fp32.
    const t = this.t;
    const params = (bytes: number) => this.alloc('params', bytes);
    const full = (ns: number[]) => ns.map((n) => params(n * this.wb));
    const embedding = full(t.embedding);
    const lora = this.lora;
    for (let i = 0; i < this.L; i++) {
      const unit: Unit = {
        tensors: t.block,
        local: lora ? lora.frozenBlock(params) : full(t.block),
        gathered: [],
        grads: [],
        rsState: 0,
      };
      if (lora && this.fsdp) {
        // FSDP2 over the PEFT model: the block's unit holds its frozen base and its adapters (the trainable ones).
        const adapters = lora.blockAdapters();
        unit.local.push(...adapters.map((n) => params(n * lora.adapterBytes)));
        unit.tensors = [...t.block, ...adapters];
        unit.bytes = [...t.block.map(() => this.wb), ...adapters.map(() => lora.adapterBytes)];
        unit.trainable = [...t.block.map(() => false), ...adapters.map(() => true)];
      }
      this.units.push(unit);
    }
    const tail = full([...t.finalNorm, ...t.head]);
    // Under FSDP2 the adapters were made with their blocks' units; the optimizer's list is the same.
    lora?.parameters(this.fsdp ? () => 0 : params);
    const rootTensors = [...t.embedding, ...t.finalNorm, ...t.head];
    this.units.push({
      tensors: rootTensors,
      local: [...embedding, ...tail],
      gathered: [],
      grads: [],
      rsState: 0,
      // LoRA under FSDP2 (no modules_to_save): the root's embedding, final norm and head are frozen.
      ...(lora && this.fsdp ? { trainable: rootTensors.map(() => false) } : {}),
    });
    this.fsdpUnits?.shard();
    const N = worldSize(this.input);
    if (!this.fsdp && N > 1 && this.input.strategy === 'NO_SHARD') {
      // DDP's gradient buckets (bucket_cap_mb each) hold every gradient once more, unless gradients are views into them.
      if (!this.input.ddp.gradientAsBucketView) {
        const total = this.lora
          ? this.lora.trainableBytes()
          : this.units.reduce((s, u) => s + u.tensors.reduce((a, n) => a + n * this.wb, 0), 0);
        const cap = Math.max(1, this.input.ddp.bucketCapMb) * MiB;
        for (let left = total; left > 0; left -= cap) this.alloc('ddpBuckets', Math.min(cap, left));
      }
    }
    // Token ids and targets (int64), cut from one (B, T + 1) draw.
    const tokens = this.alloc('batch', this.s.batch * (this.s.seq + 1) * 8);
    this.alloc('batch', this.s.t * 8);
    this.alloc('batch', this.s.t * 8);
    this.free(tokens);
  }

  /** cuBLAS's workspace of the thread doing `pass` (and, with the first, cuBLASLt's), made once. */
  private cublasWorkspaces(pass: 'forward' | 'backward'): void {
    if (this.input.device !== 'cuda' || this.workspaces.has(pass)) return;
    this.workspaces.add(pass);
    this.alloc('cublas', cublasWorkspaceBytes(this.input.gpu?.computeCapability));
    if (pass === 'forward') this.alloc('cublas', CUBLASLT_WORKSPACE_BYTES);
  }

  private forward(): { blocks: Array<{ kept: BlockKept; policy: BlockPolicy }>; tail: Tail } {
    const s = this.s;
    const root = this.units[this.L];
    this.fsdpUnits?.gather(root, 'forward');
    // Embedding (the weight's dtype: fp32 unless FSDP gathered it in param_dtype), plus learned positions.
    this.cublasWorkspaces('forward');
    const embBytes = this.mode === 'low' ? s.a : 4;
    let x = this.alloc('saved', s.t * s.C * embBytes);
    if (this.input.model.positionEmbeddings > 0) {
      const sum = this.alloc('saved', s.t * s.C * s.xr);
      this.free(x);
      x = sum;
    }
    const blocks: Array<{ kept: BlockKept; policy: BlockPolicy }> = [];
    for (let i = 0; i < this.L; i++) {
      this.block = i;
      const unit = this.units[i];
      this.fsdpUnits?.gather(unit, 'forward');
      const policy = this.policyOf(i) ?? 'none';
      const { out, kept } = blockForward(this, s, x, policy);
      blocks.push({ kept, policy });
      x = out;
      if (this.input.strategy !== 'SHARD_GRAD_OP') this.fsdpUnits?.reshard(unit);
    }
    const tail = this.head(x);
    this.fsdpUnits?.postForward();
    return { blocks, tail };
  }

  /**
   * Final norm, LM head, loss (F.cross_entropy on fp32 logits): the logits and log_softmax's fp32
   * output stay for backward. Under autocast the head casts the tied weight (saved) and its fp32
   * input; leaving autocast frees the copies nothing saved.
   */
  private head(xL: number): Tail {
    const s = this.s;
    const V = this.input.model.vocabSize;
    const lnOut = this.alloc('saved', s.t * s.C * s.xr);
    const stats = [this.alloc('saved', s.t * 4), ...(s.stats > 4 ? [this.alloc('saved', s.t * 4)] : [])];
    let headCast = 0;
    let lnCast = 0;
    if (this.mode === 'autocast') {
      if (this.input.model.headBias) this.autocastCache.push(this.alloc('autocast', V * 2));
      headCast = this.alloc('autocast', V * s.C * 2);
      lnCast = this.alloc('saved', s.t * s.C * 2);
    }
    const logits = this.alloc('logits', s.t * V * s.a);
    if (lnCast) this.free(lnOut); // the fp32 norm output; the linear saved its bf16 copy
    // F.cross_entropy in fp32: a float copy of bf16 logits, and log_softmax's output (saved).
    const upcast = s.a < 4 ? this.alloc('logits', s.t * V * 4) : 0;
    const logSoftmax = this.alloc('logits', s.t * V * 4);
    this.free(upcast);
    this.exitAutocast();
    return { xL, stats, lnOut: lnCast || lnOut, headCast, logits, logSoftmax };
  }

  private backward(fwd: { blocks: Array<{ kept: BlockKept; policy: BlockPolicy }>; tail: Tail }): void {
    const s = this.s;
    const m = this.input.model;
    const V = m.vocabSize;
    const { tail } = fwd;
    // Loss: nll_loss's and log_softmax's backward, in fp32; back to the logits' dtype.
    const gLogSoftmax = this.alloc('logits', s.t * V * 4);
    const gLogits32 = this.alloc('logits', s.t * V * 4);
    this.free(gLogSoftmax);
    this.free(tail.logSoftmax);
    let gLogits = gLogits32;
    if (s.a < 4) {
      gLogits = this.alloc('logits', s.t * V * s.a);
      this.free(gLogits32);
    }
    // FSDP2's root pre-backward is a hook on its output, the logits: it runs once their gradient is made.
    this.fsdpUnits?.preBackward();
    // Autograd's device thread gets its own cuBLAS handle and workspace at its first matrix product.
    this.cublasWorkspaces('backward');
    // LM head: mm's backward makes the weight's gradient (the tied embedding's first contribution) before the input's.
    const headWeight = V * m.dModel;
    const autocast = this.mode === 'autocast';
    // A frozen head (LoRA) makes no weight gradient, only its input's.
    const headTrains = !this.lora || this.lora.headTrains(m.tieEmbeddings);
    const headLow = !headTrains
      ? 0
      : autocast
        ? this.alloc('grads', headWeight * 2)
        : this.paramGrad(m.tieEmbeddings ? 'wte' : 'head', headWeight, this.units[this.L]);
    const headBiasLow =
      m.headBias && headTrains
        ? autocast
          ? this.alloc('grads', V * 2)
          : this.paramGrad('head.bias', V, this.units[this.L])
        : 0;
    const gHead = this.alloc('actGrads', s.t * s.C * s.a);
    this.free(gLogits);
    this.free(tail.headCast);
    this.free(tail.lnOut);
    let g = gHead;
    let headGrad = headLow;
    if (autocast) {
      // ToCopyBackward of the input's, the weight's and the bias's copies, in that order.
      g = this.alloc('actGrads', s.t * s.C * 4);
      this.free(gHead);
      if (headLow) {
        headGrad = this.alloc('grads', headWeight * 4);
        this.free(headLow);
        if (!m.tieEmbeddings) this.grads.set('root.head', headGrad);
      }
      if (headBiasLow) {
        this.grads.set('root.head.bias', this.alloc('grads', V * 4));
        this.free(headBiasLow);
      }
    }
    // Final norm.
    const gX = this.alloc('actGrads', s.t * s.C * s.xr);
    if (!this.lora) for (const [j, n] of this.t.finalNorm.entries()) this.paramGrad(`norm.${j}`, n, this.units[this.L]);
    this.free(g);
    this.free(tail.xL);
    for (const id of tail.stats) this.free(id);
    let grad = gX;
    for (let i = this.L - 1; i >= 0; i--) {
      this.block = i;
      const unit = this.units[i];
      this.fsdpUnits?.gather(unit, 'backward');
      const b = fwd.blocks[i];
      grad = blockBackward(this, s, b.kept, b.policy, grad);
      this.fsdpUnits?.reduceScatter(unit, this.grads);
    }
    this.embeddingBackward(grad, m.tieEmbeddings ? headGrad : 0);
    this.fsdpUnits?.reduceScatter(this.units[this.L], this.grads);
    this.fsdpUnits?.finalCallback();
    this.free(tail.logits); // `del logits, loss` after backward
  }

  /**
   * Gradients of the learned positions (summed over the batch, then written into the whole table)
   * and of the token embedding (a dense V×C tensor). A tied head's contribution and the embedding's
   * are summed into a third tensor; under autocast on CUDA the head's came out of a dtype cast and
   * the sum is made in place (the H100 measurements' allocated peaks say so, to the byte; PyTorch's
   * CPU build adds into a third tensor there too, test/fixtures/pytorch-op-order/).
   */
  private embeddingBackward(gX: number, headGrad: number): void {
    const m = this.input.model;
    const s = this.s;
    const root = this.units[this.L];
    if (this.lora && !this.lora.embedTrainable) {
      // LoRA: the frozen embedding takes no gradient; a tied head's copy (modules_to_save) keeps its own.
      this.free(gX);
      if (headGrad) this.grads.set('root.wte', headGrad);
      return;
    }
    if (m.positionEmbeddings > 0) {
      const perPosition = this.alloc('actGrads', s.seq * m.dModel * s.xr);
      this.paramGrad('wpe', m.positionEmbeddings * m.dModel, root);
      this.free(perPosition);
    }
    const wte = m.vocabSize * m.dModel;
    if (!m.tieEmbeddings) {
      this.denseEmbeddingGrad(wte, root, true);
      this.free(gX);
      return;
    }
    const dense = this.denseEmbeddingGrad(wte, root);
    this.free(gX);
    if (!headGrad || (this.mode === 'autocast' && this.input.device === 'cuda')) {
      this.free(dense);
      if (this.fsdp) root.grads = root.grads.filter((id) => id !== dense);
      else if (headGrad) this.grads.set('root.wte', headGrad);
      return;
    }
    const sum = this.fsdp ? this.alloc('gradsUnsharded', wte * this.p) : this.alloc('grads', wte * this.wb);
    this.free(headGrad);
    this.free(dense);
    if (this.fsdp) root.grads = [...root.grads.filter((id) => id !== dense && id !== headGrad), sum];
    else this.grads.set('root.wte', sum);
  }

  /**
   * embedding_dense_backward. On CUDA with more than 3072 tokens it sorts the token ids and sums
   * each id's rows in partial segments of NROWS_PER_THREAD = 10 rows (EmbeddingBackwardKernel.cu):
   * int64 sorted and original ids, then the zeroed V×C gradient, then segment offsets and counts and
   * an fp32 (tokens/10 + min(tokens, V)) × C buffer of partial sums, all freed before it returns.
   */
  private denseEmbeddingGrad(numel: number, root: Unit, asGrad = false): number {
    const s = this.s;
    const V = this.input.model.vocabSize;
    const sorting = this.input.device === 'cuda' && s.t > 3072;
    const ids = sorting ? [this.alloc('actGrads', s.t * 8), this.alloc('actGrads', s.t * 8)] : [];
    const grad = this.paramGrad('wte', numel, root, asGrad);
    if (sorting) {
      const segments = Math.min(s.t, V);
      const partials = Math.floor(s.t / 10) + segments;
      const temps = [
        this.alloc('actGrads', s.t * 8),
        this.alloc('actGrads', segments * 8),
        this.alloc('actGrads', segments * 8),
        this.alloc('actGrads', partials * 8),
        this.alloc('actGrads', partials * this.input.model.dModel * 4),
      ];
      for (const id of temps.reverse()) this.free(id);
      for (const id of ids) this.free(id);
    }
    return grad;
  }

  /**
   * A parameter gradient as autograd materialises it; returns its id, or 0 when it went into an
   * existing .grad at once (a later micro-step). Plain: fp32, kept as .grad (autocast's bf16
   * gradients are cast to it by castGrads). FSDP: the unsharded gradient in param_dtype, until the
   * unit's reduce-scatter.
   */
  private paramGrad(key: string, numel: number, unit: Unit, asGrad = true, bytes = this.wb): number {
    if (this.fsdp) {
      const id = this.alloc('gradsUnsharded', numel * this.p);
      unit.grads.push(id);
      return id;
    }
    const id = this.alloc('grads', numel * bytes);
    if (!asGrad) return id;
    const full = `${unit === this.units[this.L] ? 'root' : this.block}.${key}`;
    if (this.grads.has(full)) {
      this.free(id);
      return 0;
    }
    this.grads.set(full, id);
    return id;
  }

  /** The block's linears of one kind, as parameterTensors lists them (MoE: every expert's, and the router with the first up projection). */
  private linearsOf(linear: LinearName): Array<{ key: string; weight: number; bias: number }> {
    const all = this.t.blockLinears;
    const swiglu = this.input.model.mlp === 'swiglu';
    const perExpert = swiglu ? 3 : 2;
    const experts = this.input.model.experts?.count ?? 1;
    const kinds: LinearName[] = swiglu ? ['gate', 'up', 'down'] : ['fc', 'down'];
    const pick = (i: number) => ({ key: `l${i}`, ...all[i] });
    if (linear === 'qkv') return [pick(0)];
    if (linear === 'proj') return [pick(1)];
    const k = kinds.indexOf(linear);
    const out = Array.from({ length: experts }, (_, e) => pick(2 + e * perExpert + k));
    if (this.input.model.experts && k === 0) out.push(pick(all.length - 1));
    return out;
  }

  // TensorLog: autocast's copies and the parameters' gradients, for the block replay.
  castLinear(linear: LinearName, term: 'autocast' | 'recompute', saved: boolean): number {
    if (this.mode !== 'autocast') return 0;
    // bitsandbytes' linears are no autocast ops: they dequantise their weight (BlockLora.dequant).
    if (this.lora?.quantised) return 0;
    let weights = 0;
    let biases = 0;
    for (const l of this.linearsOf(linear)) {
      weights += l.weight;
      biases += l.bias;
    }
    if (biases) this.autocastCache.push(this.alloc(term === 'recompute' ? 'recompute' : 'autocast', biases * 2));
    const w = this.alloc(term === 'recompute' ? 'recompute' : 'autocast', weights * 2);
    if (saved) return w;
    this.autocastCache.push(w);
    return 0;
  }

  exitAutocast(): void {
    for (const id of this.autocastCache) this.free(id);
    this.autocastCache = [];
  }

  linearGrads(linear: LinearName, betweenWeightAndBias?: () => void): number[] {
    if (this.lora) {
      betweenWeightAndBias?.();
      return [];
    }
    const unit = this.units[this.block];
    const low: number[] = [];
    const grad = (key: string, numel: number) => {
      if (!numel) return;
      if (this.mode === 'autocast') low.push(this.alloc('grads', numel * 2));
      else this.paramGrad(key, numel, unit);
    };
    const linears = this.linearsOf(linear);
    for (const l of linears) grad(`${l.key}.w`, l.weight);
    betweenWeightAndBias?.();
    for (const l of linears) grad(`${l.key}.b`, l.bias);
    return low;
  }

  castGrads(linear: LinearName, low: number[]): void {
    if (!low.length) return;
    const unit = this.units[this.block];
    let i = 0;
    const linears = this.linearsOf(linear);
    for (const [part, key] of [
      ['w', 'weight'],
      ['b', 'bias'],
    ] as const) {
      for (const l of linears) {
        if (!l[key]) continue;
        this.paramGrad(`${l.key}.${part}`, l[key], unit);
        this.free(low[i++]);
      }
    }
  }

  adapterGrad(linear: LinearName, index: number, which: 'A' | 'B'): void {
    const lora = this.lora!;
    const { key, numel } = lora.adapter(linear, index, which);
    // Under autocast the adapter's matmul makes a bf16 gradient, cast to the fp32 weight's.
    const low = this.mode === 'autocast' && lora.adapterBytes === 4 ? this.alloc('grads', numel * 2) : 0;
    this.paramGrad(key, numel, this.units[this.block], true, lora.adapterBytes);
    this.free(low);
  }

  normGrads(first: boolean): void {
    if (this.lora) return;
    const normTensors = this.input.model.norm === 'layernorm' ? 2 : 1;
    const two = (this.input.model.normsPerBlock ?? 2) === 2;
    if (!first && !two) return;
    const tensors = this.t.block.slice(first ? 0 : normTensors, first ? normTensors : 2 * normTensors);
    for (const [j, n] of tensors.entries()) this.paramGrad(`norm${first ? 1 : 2}.${j}`, n, this.units[this.block]);
  }

  private policyOf(block: number): 'every' | 'selective' | undefined {
    const c = this.input.checkpointing;
    if (c.policy === 'selective') return 'selective';
    if (c.policy === 'every_n' && (block + 1) % Math.max(1, c.everyN) === 0) return 'every';
    return undefined;
  }

  /** AdamW(foreach): moments made on the first step; one intermediate per parameter (sqrt of exp_avg_sq); zero_grad frees the gradients. */
  private optimizerStep(first: boolean): void {
    const host = this.input.offload.optimizer || (this.fsdp && this.input.offload.params);
    const N = worldSize(this.input);
    const share = this.input.strategy === 'SHARD_OPTIMIZER' ? N : this.G;
    const t = this.t;
    const order = [...t.embedding, ...Array.from({ length: this.L }, () => t.block).flat(), ...t.finalNorm, ...t.head];
    // AdamW keeps its states in each parameter's dtype; LoRA steps only the trainable tensors.
    // Under FSDP2 each rank steps its 1/G shard of each adapter.
    const locals = this.lora
      ? this.lora.trainable.map((x) => Math.ceil(x.numel / this.G) * x.bytes)
      : order.map((n) => Math.ceil(n / share) * this.wb);
    if (first)
      for (const b of locals)
        this.optimizerState.push(this.alloc('optimizer', b, 0, host), this.alloc('optimizer', b, 0, host));
    const step = locals.map((b) => this.alloc('optimizerStep', b, 0, host));
    // The intermediates' Python list is dropped last item first; zero_grad then goes in parameter order.
    for (const id of step.reverse()) this.free(id);
    for (const id of [...this.grads.entries()].sort((a, b) => gradOrder(a[0]) - gradOrder(b[0])).map((e) => e[1]))
      this.free(id);
    this.grads.clear();
  }
}

/**
 * Where a gradient's key falls in parameter order (zero_grad frees them in that order): embeddings,
 * then each block's first norm, attention's linears, second norm and the MLP's linears, then the
 * final norm and head. FSDP: a unit's reduce-scattered buffer goes with its unit.
 */
function gradOrder(key: string): number {
  const [where, name, part] = key.split('.');
  if (where === 'root') return name === 'wte' ? -2 : name === 'wpe' ? -1 : 1e9;
  if (where === 'rs') return Number(name) * 1000;
  let within: number;
  if (name.startsWith('lora')) within = 100 + Number(name.slice(4));
  else if (name === 'norm1') within = Number(part);
  else if (name === 'norm2') within = 6 + Number(part);
  else {
    const i = Number(name.slice(1));
    within = (i < 2 ? 2 + 2 * i : 8 + 2 * (i - 2)) + (part === 'b' ? 1 : 0);
  }
  return Number(where) * 1000 + within;
}

interface Tail {
  xL: number;
  stats: number[];
  lnOut: number;
  headCast: number;
  logits: number;
  logSoftmax: number;
}
