// FSDP2's parameter units for the PyTorch replay (./pytorch-replay.ts): fully_shard per block and at
// the root, each unit's all-gather before its forward and backward (with the implicit prefetch that
// keeps one flat all-gather output alive), its reshard, and the reduce-scatter of its gradients.
// Over a PEFT LoRA model (accelerate's FSDP2 plugin: per decoder block and the root) a unit holds the
// frozen base and the adapters alike: all are sharded and all-gathered, but only the trainable
// (requires_grad) tensors make gradients, so only they are reduce-scattered; a unit with none is not.
import type { MemoryInput } from '../memory-input';
import type { ReplayTerm } from './pytorch-replay';

/** The reduce-scatter's own CUDA stream (the allocator keeps its blocks apart). */
const RS_STREAM = 1;

export interface Unit {
  tensors: number[];
  /** Bytes per element of each tensor as loaded (default: the loading dtype's). */
  bytes?: number[];
  /** Which tensors train (default: all); the others are frozen, sharded but never reduce-scattered. */
  trainable?: boolean[];
  /** Local parameters: the whole tensors, or 1/G shards once fully_shard ran. */
  local: number[];
  gathered: number[];
  /** Unsharded gradients (param_dtype) waiting for the unit's reduce-scatter. */
  grads: number[];
  rsState: number;
}

/** The replay's allocations, as the units make them. */
export interface UnitLog {
  alloc(term: ReplayTerm, bytes: number, stream?: number, host?: boolean): number;
  free(id: number): void;
}

export class Fsdp2Units {
  /** FSDP over several ranks: the flat all-gather output kept for overlap (forward) or prefetched (backward). */
  private flat = 0;

  constructor(
    private readonly log: UnitLog,
    /** The blocks' units, then the root's. */
    private readonly units: Unit[],
    private readonly input: MemoryInput,
    /** Ranks a unit is sharded over. */
    private readonly G: number,
    /** Bytes of a gathered parameter / its unsharded gradient (param_dtype). */
    private readonly p: number,
    /** Bytes of a reduce-scattered gradient element (reduce_dtype). */
    private readonly r: number,
    /** Bytes of a sharded parameter and its gradient (the loading dtype). */
    private readonly wb: number,
  ) {}

  /** fully_shard per block, then at the root: each parameter becomes a 1/G shard (dim 0 padded to G). */
  shard(): void {
    const offload = this.input.offload.params;
    for (const unit of this.units) {
      const shards = unit.tensors.map((n, i) =>
        this.log.alloc('params', Math.ceil(n / this.G) * (unit.bytes?.[i] ?? this.wb), 0, offload),
      );
      for (const id of unit.local) this.log.free(id);
      unit.local = shards;
    }
  }

  /**
   * FSDP2 unshard: every parameter of the unit in param_dtype. One rank copies the shard; several
   * all-gather into a flat buffer and copy out. In forward the flat buffer is kept until the next
   * unit's copy-out is done (implicit prefetch); in backward it is freed at once and the next unit prefetched.
   */
  gather(unit: Unit, phase: 'forward' | 'backward'): void {
    if (unit.gathered.length) return;
    const numel = unit.tensors.reduce((s, n) => s + n, 0);
    let flat = 0;
    if (this.G > 1) flat = phase === 'backward' && this.flat ? this.flat : this.log.alloc('gathered', numel * this.p);
    unit.gathered = unit.tensors.map((n) => this.log.alloc('gathered', n * this.p));
    if (phase === 'forward') {
      // wait_for_unshard drops the previous unit's flat output before this copy-out, but its local
      // `prev_all_gather_state` still holds it until the method returns: freed after the copy-out
      // (measured: bench:memory-lora -- --world 2 --fsdp, one block's gathered bytes at the forward peak).
      if (this.flat !== flat) this.log.free(this.flat);
      this.flat = flat;
      return;
    }
    this.log.free(flat);
    this.flat = 0;
    const i = this.units.indexOf(unit);
    const L = this.units.length - 1;
    if (this.G > 1 && i > 0 && i < L) this.flat = this.log.alloc('gathered', this.numel(this.units[i - 1]) * this.p);
  }

  reshard(unit: Unit): void {
    for (const id of unit.gathered) this.log.free(id);
    unit.gathered = [];
  }

  /** The root's post-forward frees the last all-gather output kept for overlap. */
  postForward(): void {
    this.log.free(this.flat);
    this.flat = 0;
  }

  /** The root's pre-backward prefetches the last block's all-gather. */
  preBackward(): void {
    const L = this.units.length - 1;
    if (this.G > 1 && L > 0) this.flat = this.log.alloc('gathered', this.numel(this.units[L - 1]) * this.p);
  }

  /**
   * FSDP2's post-backward for a unit: reshard, then reduce-scatter its gradients. The previous
   * unit's reduce-scatter input is freed first; this one's is kept until the next unit's. The output
   * (1/G, on the reduce-scatter stream) becomes the sharded gradients (`grads`, keyed "rs.<unit>"),
   * or is added to them.
   */
  reduceScatter(unit: Unit, grads: Map<string, number>): void {
    this.reshard(unit);
    this.freeReduceScatterInputs();
    // Only the tensors that made a gradient are reduce-scattered (FSDPParamGroup.post_backward); none: nothing.
    const trained = unit.tensors.filter((_, i) => unit.trainable?.[i] ?? true);
    if (!trained.length) return;
    const numel = trained.reduce((s, n) => s + n, 0);
    const padded = trained.reduce((s, n) => s + Math.ceil(n / this.G) * this.G, 0);
    // FSDP2 requires one dtype among a unit's trainable tensors: the sharded gradients' (its _orig_dtype).
    const gb = unit.bytes?.[unit.tensors.findIndex((_, i) => unit.trainable?.[i] ?? true)] ?? this.wb;
    unit.rsState = this.log.alloc('reduceScatter', padded * this.r);
    for (const id of unit.grads) this.log.free(id);
    unit.grads = [];
    let out = this.log.alloc('grads', (padded / this.G) * this.r, RS_STREAM);
    if (this.r !== gb) {
      const cast = this.log.alloc('grads', (padded / this.G) * gb, RS_STREAM);
      this.log.free(out);
      out = cast;
    }
    const key = `rs.${this.units.indexOf(unit)}`;
    if (this.input.offload.params) {
      // CPU offload copies the shard's gradient to pinned host memory.
      const onHost = this.log.alloc('grads', (numel / this.G) * gb, 0, true);
      this.log.free(out);
      out = onHost;
    }
    if (grads.has(key))
      this.log.free(out); // a later micro-step: added into the sharded gradient
    else grads.set(key, out);
  }

  /** The root's final callback waits for the last reduce-scatter and frees its input. */
  finalCallback(): void {
    this.freeReduceScatterInputs();
  }

  private freeReduceScatterInputs(): void {
    for (const u of this.units) {
      if (!u.rsState) continue;
      this.log.free(u.rsState);
      u.rsState = 0;
    }
  }

  private numel(unit: Unit): number {
    return unit.tensors.reduce((s, n) => s + n, 0);
  }
}
