// PyTorch training memory: plain PyTorch (autocast for bf16) and DDP for NO_SHARD,
// ZeroRedundancyOptimizer for SHARD_OPTIMIZER, FSDP2 (`fully_shard`, one unit per block plus the
// root) for the sharded strategies; AdamW (foreach) and zero_grad(set_to_none=True).
// Rather than adding up formulas, the run is replayed tensor by tensor (./pytorch-replay.ts) through
// a replay of the CUDA caching allocator (../caching-allocator.ts): the bytes of every term at each
// phase's highest moment, torch.cuda.max_memory_allocated (blocks as the allocator hands them out)
// and max_memory_reserved (the segments it had to cudaMalloc). Step 1 creates the optimizer state;
// reserved memory can still grow in step 3 (what a segment holds after step 1 decides what step 2's
// requests find free, and so on): steps are replayed until one from the third on reserves nothing
// new (the harness measures steps 2 and 3), at most MAX_STEPS. The phase peaks are the last step's.
import { CachingAllocator } from '../caching-allocator';
import type { MemoryCategory, Phase } from '../memory-estimate';
import { shardGroupSize, type MemoryInput } from '../memory-input';
import { processOverheads } from './gpu-overheads';
import { REPLAY_TERMS, replayTraining, type ReplayPhase, type ReplaySink, type ReplayTerm } from './pytorch-replay';
import type { FrameworkMoments, TermInfo } from './term-spec';

const MIN_STEPS = 3;
const MAX_STEPS = 6;

export function pytorchMoments(input: MemoryInput): FrameworkMoments {
  const fsdp =
    input.strategy === 'SHARD_GRAD_OP' || input.strategy === 'FULL_SHARD' || input.strategy === 'HYBRID_SHARD';
  const G = shardGroupSize(input);
  const terms = REPLAY_TERMS.map((t) => termInfo(t, input, fsdp, G));
  const sink = new MeasuringSink(terms.length, input.device === 'cuda');
  replayTraining(input, sink, MAX_STEPS, (step) => step >= MIN_STEPS && !sink.grewInStep);
  const notes: string[] = [];
  if (fsdp)
    notes.push(
      input.fsdp.version === 1
        ? "FSDP1 (FullyShardedDataParallel, the config's fsdp_version 1) estimated with one wrapped unit per block, as FSDP2's fully_shard lays them out (FSDP1's flat parameters add their padding); the root unit (embeddings, final norm, head) stays gathered between forward and backward"
        : 'FSDP2 (fully_shard) with one unit per block; the root unit (embeddings, final norm, head) stays gathered between forward and backward',
    );
  if (input.offload.optimizer && !fsdp)
    notes.push('PyTorch DDP has no optimizer offload; the estimate assumes a CPU optimizer step');
  const process = processOverheads(input, input.strategy === 'HYBRID_SHARD' ? 2 : 1);
  return {
    terms: [...terms, ...process.map((p) => p.info)],
    phasePeaks: Object.fromEntries(
      (['forward', 'backward', 'optimizer'] as const).map((ph) => {
        const best = sink.best[ph];
        return [ph, { bytes: [...best.bytes, ...process.map((p) => p.bytes)], allocated: best.allocated }];
      }),
    ) as FrameworkMoments['phasePeaks'],
    momentTotals: sink.totals.map((x) => x + process.reduce((s, p) => s + (p.info.outsideAllocator ? p.bytes : 0), 0)),
    allocator:
      input.device === 'cuda'
        ? {
            allocatedPeak: sink.allocator!.peakAllocated,
            reservedPeak: sink.allocator!.peakReserved,
            largestSegment: sink.allocator!.largestSegment,
          }
        : undefined,
    hostPeak: sink.hostPeak,
    notes,
  };
}

function termInfo(t: ReplayTerm, input: MemoryInput, fsdp: boolean, G: number): TermInfo {
  const shard = fsdp ? ` (1/${G})` : '';
  // The dtype the weights are loaded in (TRL's model_init_kwargs.dtype), and LoRA's frozen base where it is replayed.
  const w = input.weights?.dtype === 'bfloat16' ? 'bf16' : input.weights?.dtype === 'float16' ? 'fp16' : 'fp32';
  const quant = input.weights?.quant;
  const lora = input.lora && !fsdp ? input.lora : undefined;
  const adapters = lora ? (lora.adapterDtype === 'float32' ? 'fp32' : 'bf16') : w;
  const table: Record<ReplayTerm, [string, MemoryCategory, string]> = {
    params: [
      'params.master',
      'params',
      lora
        ? `frozen base weights (${quant ? `${quant.kind === 'int8' ? 'int8' : quant.kind.toUpperCase()} linears, the rest ${w}` : w}) and LoRA adapters (${adapters})`
        : fsdp
          ? `${w} parameter shard${shard}`
          : `${w} parameters`,
    ],
    autocast: [
      'params.autocast-copies',
      'params',
      'bf16 weight copies autocast makes (kept by each linear until its backward)',
    ],
    grads: [
      'grads.fp32',
      'grads',
      lora
        ? `LoRA adapter gradients (.grad, ${adapters})`
        : fsdp
          ? `${w} gradient shard${shard}, written by the reduce-scatter`
          : `${w} gradients (.grad), and a tied embedding's two contributions and their sum`,
    ],
    gradsUnsharded: [
      'grads.unsharded',
      'grads',
      `unsharded ${input.precision.param} gradients of the units in backward (before their reduce-scatter)`,
    ],
    optimizer: [
      'optimizer.adamw',
      'optimizer',
      `AdamW moments (exp_avg, exp_avg_sq), ${lora ? `${adapters}, of the adapters` : w}${fsdp || input.strategy === 'SHARD_OPTIMIZER' ? ', sharded' : ''}`,
    ],
    optimizerStep: [
      'workspace.optimizer',
      'workspace',
      'foreach AdamW intermediate (sqrt of exp_avg_sq, one per parameter)',
    ],
    saved: [
      'activations.saved',
      'activations',
      `tensors saved for backward by ${input.model.nLayers} blocks, the final norm and the embeddings`,
    ],
    recompute: [
      'activations.recompute',
      'activations',
      "a checkpointed block's activations (and autocast weight copies) recomputed for its backward",
    ],
    actGrads: ['activations.grads', 'activations', 'gradients of activations and temporaries while an op runs'],
    logits: ['activations.logits', 'activations', 'logits, the fp32 log-softmax the loss keeps, and their gradients'],
    gathered: [
      'comm.gathered',
      'comm',
      `parameters gathered in ${input.precision.param} (the root unit, the block computing${G > 1 ? ', the all-gather in flight' : ''})`,
    ],
    reduceScatter: [
      'comm.reduce-scatter',
      'comm',
      `reduce-scatter input in ${input.precision.reduce} (a unit's, kept until the next unit's)`,
    ],
    ddpBuckets: ['comm.ddp-buckets', 'comm', `DDP gradient buckets (${input.ddp.bucketCapMb} MB each, all gradients)`],
    cublas: ['workspace.cublas', 'workspace', "cuBLAS workspaces (the forward thread's and autograd's) and cuBLASLt's"],
    batch: ['other.batch', 'other', 'token ids and targets (int64)'],
  };
  const [id, category, label] = table[t];
  const where =
    (t === 'params' && fsdp && input.offload.params) ||
    ((t === 'optimizer' || t === 'optimizerStep') && (input.offload.optimizer || (fsdp && input.offload.params)))
      ? 'host'
      : 'device';
  return { id, category, label, where };
}

/** Tracks bytes per term, the caching allocator, and each phase's highest moment in the last step. */
class MeasuringSink implements ReplaySink {
  readonly allocator: CachingAllocator | undefined;
  readonly best: Record<Phase, { allocated: number; bytes: number[] }>;
  readonly totals: number[] = [];
  hostPeak = 0;
  private readonly live: number[];
  // Per tensor id (small consecutive integers): bytes, and term index (−1: host, −2: freed).
  private bytesOf = new Float64Array(1024);
  private termOf = new Int8Array(1024).fill(-2);
  private readonly termIndex = Object.fromEntries(REPLAY_TERMS.map((t, i) => [t, i])) as Record<ReplayTerm, number>;
  private readonly termCount: number;
  private requested = 0;
  private host = 0;
  private measuring = false;
  private step = 0;
  private phaseNow: ReplayPhase = 'setup';
  private reservedAtStepStart = 0;

  constructor(termCount: number, cuda: boolean) {
    this.allocator = cuda ? new CachingAllocator() : undefined;
    this.live = new Array<number>(termCount).fill(0);
    const empty = () => ({ allocated: -1, bytes: new Array<number>(termCount).fill(0) });
    this.termCount = termCount;
    this.best = { forward: empty(), backward: empty(), optimizer: empty() };
  }

  alloc(id: number, bytes: number, term: ReplayTerm, stream: number, host: boolean): void {
    if (id >= this.bytesOf.length) this.grow(id);
    this.bytesOf[id] = bytes;
    if (host) {
      this.termOf[id] = -1;
      this.host += bytes;
      if (this.host > this.hostPeak) this.hostPeak = this.host;
      return;
    }
    const index = this.termIndex[term];
    this.termOf[id] = index;
    this.live[index] += bytes;
    this.requested += bytes;
    if (this.allocator) this.allocator.malloc(id, bytes, stream);
    if (this.measuring) this.moment();
  }

  free(id: number): void {
    const term = this.termOf[id];
    if (term === -2) throw new Error(`memory replay: tensor ${id} freed twice`);
    this.termOf[id] = -2;
    const bytes = this.bytesOf[id];
    if (term === -1) {
      this.host -= bytes;
      return;
    }
    this.live[term] -= bytes;
    this.requested -= bytes;
    this.allocator?.free(id);
  }

  /** Whether the step replayed so far reserved a new segment (reserved memory is not yet steady). */
  get grewInStep(): boolean {
    return !!this.allocator && this.allocator.reserved > this.reservedAtStepStart;
  }

  phase(step: number, phase: ReplayPhase): void {
    // The allocated peak from step 2 (as the harness resets its counters); reserved memory from the start.
    if (step === 2 && this.step !== 2) this.allocator?.resetPeaks();
    if (step !== this.step) {
      this.reservedAtStepStart = this.allocator?.reserved ?? 0;
      // Each step from the second measures afresh: the last one replayed gives the phase peaks and moments.
      if (step >= 2) {
        for (const b of Object.values(this.best)) {
          b.allocated = -1;
          b.bytes.fill(0);
        }
        this.totals.length = 0;
      }
    }
    this.step = step;
    this.phaseNow = phase;
    this.measuring = step >= 2 && phase !== 'setup';
    // A phase starts where the last ended: its first moment is what is already live.
    if (this.measuring) this.moment();
  }

  private moment(): void {
    const allocated = this.allocator ? this.allocator.allocated : this.requested;
    this.totals.push(this.requested);
    const best = this.best[this.phaseNow as Phase];
    if (allocated > best.allocated) {
      best.allocated = allocated;
      for (let i = 0; i < this.termCount; i++) best.bytes[i] = this.live[i];
    }
  }

  private grow(id: number): void {
    let n = this.bytesOf.length;
    while (n <= id) n *= 2;
    const bytes = new Float64Array(n);
    bytes.set(this.bytesOf);
    const terms = new Int8Array(n).fill(-2);
    terms.set(this.termOf);
    this.bytesOf = bytes;
    this.termOf = terms;
  }
}
