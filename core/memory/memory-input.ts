// Everything the memory model needs to know about a training run, independent of which config
// file it came from. Readers in ./inputs/ build one from our run config, a DeepSpeed config or an
// accelerate config; the panel edits one directly.
import type { GpuSpec } from './gpu-presets';
import type { ModelShape } from './model-shape';
import type { ParallelPlan } from './parallel/parallel-plan';

/**
 * Whose memory behaviour is modelled: our native runtime, PyTorch (FSDP / DDP), DeepSpeed ZeRO, or
 * torchtitan's N-D parallelism (FSDP2 with tensor, context, pipeline and expert parallel: `parallel`).
 */
export type Framework = 'fsdp-studio' | 'pytorch' | 'deepspeed' | 'torchtitan';

export type ShardingStrategy = 'NO_SHARD' | 'SHARD_OPTIMIZER' | 'SHARD_GRAD_OP' | 'FULL_SHARD' | 'HYBRID_SHARD';
export const SHARDING_STRATEGIES: readonly ShardingStrategy[] = [
  'NO_SHARD',
  'SHARD_OPTIMIZER',
  'SHARD_GRAD_OP',
  'FULL_SHARD',
  'HYBRID_SHARD',
];

export type Dtype = 'float32' | 'bfloat16' | 'float16';

export type CheckpointPolicy = 'none' | 'every_n' | 'selective' | 'auto';

export interface MemoryInput {
  framework: Framework;
  /** Where the training tensors live; 'cpu' only for our runtime's CPU backend. */
  device: 'cuda' | 'cpu';
  model: ModelShape;
  seqLen: number;
  /** Sequences per rank per micro-step. */
  microBatch: number;
  gradAccumSteps: number;
  strategy: ShardingStrategy;
  nprocPerNode: number;
  nnodes: number;
  /** HYBRID_SHARD: ranks per shard group (defaults to nprocPerNode). */
  ranksPerNode?: number;
  precision: {
    /** Parameters as the forward and backward see them. */
    param: Dtype;
    /** Gradient communication. */
    reduce: Dtype;
    /** Activations and buffers. */
    activation: Dtype;
  };
  checkpointing: {
    policy: CheckpointPolicy;
    everyN: number;
    /** For 'auto': the per-rank budget the plan must fit. */
    budgetBytes?: number;
  };
  offload: { optimizer: boolean; params: boolean };
  /** A fused (flash) attention kernel keeps no seq × seq matrices. */
  attention: 'eager' | 'flash';
  dropout: number;
  fsdp: {
    backwardPrefetch: 'BACKWARD_PRE' | 'BACKWARD_POST' | 'NONE';
    forwardPrefetch: boolean;
    /** Which FSDP the config asks for (accelerate's fsdp_version); absent: FSDP2, as modelled. */
    version?: 1 | 2;
  };
  ddp: { bucketCapMb: number; gradientAsBucketView: boolean };
  zero: ZeroSettings;
  /** Our runtime: batches the data loader reads ahead (data.prefetch_batches, default 2). */
  prefetchBatches?: number;
  /** The target the verdict is given for; none means no verdict. */
  gpu?: GpuSpec;
  /**
   * PyTorch on a GPU: cuBLAS workspaces the process made before this run, as in a process that ran
   * matrix products already (the measuring harness measures every configuration in one process).
   * Absent: a training script's fresh process, which makes them at its first forward and backward
   * matmul of step 1, where the backward one can split and pin a cached block. `backwardSegmentBytes`:
   * the size of the cached segment the backward workspace was carved from back then.
   */
  cublasHistory?: { forward: boolean; backward: boolean; backwardSegmentBytes?: number };
  /** N-D parallelism (framework 'torchtitan'): degrees, schedule, the model with its experts. */
  parallel?: ParallelPlan;
  /**
   * What the config sets that changes memory by more than 10 % and the estimate leaves out (LoRA,
   * 4-bit weights, …): named on every line that gives the estimate, whose verdict then is not confident.
   */
  notModelled?: NotModelled[];
  /**
   * How the base model's weights are stored when that is not the fp32 master copy the precision
   * implies: bf16/fp16 weights (TRL's model_init_kwargs.dtype) trained in their own dtype, or
   * bitsandbytes' 4-bit / 8-bit linears (the rest of the model in `dtype`). Absent: fp32.
   */
  weights?: WeightStorage;
  /** PEFT LoRA: the base model frozen, adapters trained (./lora.ts). Modelled for one process or DDP. */
  lora?: LoraPlan;
}

/** bitsandbytes' quantised linears: NF4 / FP4 (4-bit, 64-element blocks) or LLM.int8. */
export type QuantKind = 'nf4' | 'fp4' | 'int8';

export interface WeightStorage {
  /** The dtype the model is loaded in (every tensor that is not a quantised linear weight). */
  dtype: Dtype;
  /** bitsandbytes quantisation of the decoder blocks' linear weights (the output head stays in `dtype`). */
  quant?: { kind: QuantKind; doubleQuant: boolean; computeDtype: Dtype };
}

/** A LoRA adapter set as PEFT builds it (LoraConfig). */
export interface LoraPlan {
  r: number;
  alpha: number;
  dropout: number;
  /** Module names as PEFT matches them (suffixes: q_proj, c_attn, …), or every linear but the output head. */
  targets: 'all-linear' | string[];
  /** Modules trained whole (a trainable copy beside the frozen original): embed_tokens, lm_head, … */
  modulesToSave: string[];
  /** Adapter weights' dtype: fp32 (PEFT's autocast_adapter_dtype), bf16 where TRL casts them (QLoRA). */
  adapterDtype: Dtype;
}

/** A setting the estimate reads but does not model (issue 36: never silently wrong). */
export interface NotModelled {
  /** Where the config says it, as written: "use_peft: true", "optim: paged_adamw_8bit". */
  key: string;
  /** In the person's words: "LoRA", "4-bit weights". */
  what: string;
  /** 'lowers': the real peak is lower, so the estimate is an upper bound; 'either': it may be lower or higher. */
  effect: 'lowers' | 'either';
}

/** DeepSpeed ZeRO's buffer settings, in elements as DeepSpeed counts them. */
export interface ZeroSettings {
  reduceBucketSize: number;
  allgatherBucketSize: number;
  prefetchBucketSize: number;
  maxLiveParameters: number;
  paramPersistenceThreshold: number;
  contiguousGradients: boolean;
  /** Stages 1–2: overlap_comm double-buffers the contiguous reduce bucket (two of reduce_bucket_size). Absent: off, DeepSpeed's default. */
  overlapComm?: boolean;
}

/** DeepSpeed's documented defaults (deepspeed/runtime/zero/config.py). */
export const ZERO_DEFAULTS: ZeroSettings = {
  reduceBucketSize: 5e8,
  allgatherBucketSize: 5e8,
  prefetchBucketSize: 5e7,
  maxLiveParameters: 1e9,
  paramPersistenceThreshold: 1e5,
  contiguousGradients: true,
};

export function bytesOf(dtype: Dtype): number {
  return dtype === 'float32' ? 4 : 2;
}

export function worldSize(input: MemoryInput): number {
  return input.nprocPerNode * input.nnodes;
}

/** Ranks a parameter, gradient or optimizer shard is divided over. */
export function shardGroupSize(input: MemoryInput): number {
  if (input.strategy === 'NO_SHARD') return 1;
  if (input.strategy === 'HYBRID_SHARD') return Math.min(input.ranksPerNode ?? input.nprocPerNode, worldSize(input));
  return worldSize(input);
}

/** A complete input with the defaults people start from: GPT-2 style fp32 FULL_SHARD, one GPU. */
export function defaultMemoryInput(model: ModelShape, seqLen: number): MemoryInput {
  return {
    framework: 'pytorch',
    device: 'cuda',
    model,
    seqLen,
    microBatch: 1,
    gradAccumSteps: 1,
    strategy: 'FULL_SHARD',
    nprocPerNode: 1,
    nnodes: 1,
    precision: { param: 'float32', reduce: 'float32', activation: 'float32' },
    checkpointing: { policy: 'none', everyN: 1 },
    offload: { optimizer: false, params: false },
    attention: 'flash',
    dropout: 0,
    fsdp: { backwardPrefetch: 'BACKWARD_PRE', forwardPrefetch: false },
    ddp: { bucketCapMb: 25, gradientAsBucketView: false },
    zero: { ...ZERO_DEFAULTS },
  };
}
