// The knobs a person turns to make a run fit, as one change at a time: applied to an estimate's
// input by the inverse questions and the panel, and written back into a config by "apply".
import { findGpu } from './gpu-presets';
import type { CheckpointPolicy, MemoryInput, ShardingStrategy } from './memory-input';
import { withDegrees, type Degrees } from './parallel/degrees';

export type MemoryChange =
  | { knob: 'microBatch'; value: number }
  | { knob: 'strategy'; value: ShardingStrategy }
  | { knob: 'checkpointing'; value: { policy: Exclude<CheckpointPolicy, 'auto'>; everyN: number } }
  | { knob: 'precision'; value: 'float32' | 'bfloat16' }
  | { knob: 'offload'; value: boolean }
  | { knob: 'nproc'; value: number }
  | { knob: 'gpu'; value: string }
  /** N-D parallel degrees (torchtitan's [parallelism]); the world size follows them. */
  | { knob: 'parallel'; value: Degrees };

export function applyChange(input: MemoryInput, change: MemoryChange): MemoryInput {
  switch (change.knob) {
    case 'microBatch':
      return { ...input, microBatch: change.value };
    case 'strategy':
      return { ...input, strategy: change.value };
    case 'checkpointing':
      return { ...input, checkpointing: { ...input.checkpointing, ...change.value } };
    case 'precision':
      return { ...input, precision: { param: change.value, reduce: change.value, activation: change.value } };
    case 'offload':
      return {
        ...input,
        offload: {
          optimizer: change.value,
          params: change.value && input.strategy !== 'NO_SHARD' && input.strategy !== 'SHARD_OPTIMIZER',
        },
      };
    case 'nproc':
      return { ...input, nprocPerNode: change.value };
    case 'gpu':
      return { ...input, gpu: findGpu(change.value) ?? input.gpu };
    case 'parallel':
      return withDegrees(input, change.value);
  }
}

export function describeChange(change: MemoryChange): string {
  switch (change.knob) {
    case 'microBatch':
      return `micro-batch ${change.value}`;
    case 'strategy':
      return change.value;
    case 'checkpointing':
      return change.value.policy === 'none'
        ? 'no activation checkpointing'
        : change.value.policy === 'selective'
          ? 'selective checkpointing'
          : `checkpoint every ${change.value.everyN === 1 ? 'block' : `${change.value.everyN} blocks`}`;
    case 'precision':
      return change.value === 'bfloat16' ? 'bf16 mixed precision' : 'fp32';
    case 'offload':
      return change.value ? 'CPU offload' : 'no CPU offload';
    case 'nproc':
      return `${change.value} GPUs per node`;
    case 'gpu':
      return change.value;
    case 'parallel':
      return describeDegrees(change.value);
  }
}

function describeDegrees(d: Degrees): string {
  const parts = [
    `dp ${d.replicate > 1 ? `${d.replicate}×${d.shard}` : d.shard}`,
    ...(d.tp > 1 ? [`tp ${d.tp}`] : []),
    ...(d.cp > 1 ? [`cp ${d.cp}`] : []),
    ...(d.pp > 1 ? [`pp ${d.pp}${d.schedule ? ` ${d.schedule}` : ''}`] : []),
    ...(d.ep > 1 ? [`ep ${d.ep}`] : []),
  ];
  return parts.join(' × ');
}
