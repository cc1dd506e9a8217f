// A Hugging Face accelerate config (the YAML `accelerate config` writes) as an estimate's input:
// the distributed type, process and machine counts, mixed precision, and the FSDP or DeepSpeed
// plugin fields. Model, sequence length, micro-batch and GPU come from the options.
// Field names as accelerate's docs and its FullyShardedDataParallelPlugin / DeepSpeedPlugin read them.
import { ZERO_STAGE_STRATEGY } from '../../config/run-config';
import type { SourceDocument } from '../../config/source-document';
import { findGpu } from '../gpu-presets';
import type { MemoryChange } from '../memory-change';
import { defaultMemoryInput, type Dtype, type MemoryInput, type ShardingStrategy } from '../memory-input';
import { beginReading } from './config-fields';
import type { ConfigAssignment, ConfigInputResult } from './config-input';
import type { EstimateOptions } from './estimate-options';
import type { ModelSource } from './model-from-options';
import { accelerateNotModelled } from './not-modelled';

const DISTRIBUTED = [
  'NO',
  'MULTI_GPU',
  'FSDP',
  'DEEPSPEED',
  'MULTI_CPU',
  'MULTI_NPU',
  'MULTI_XPU',
  'MULTI_MLU',
  'MULTI_MUSA',
  'XLA',
  'MEGATRON_LM',
] as const;
// accelerate's FSDP_SHARDING_STRATEGY, in order: the numbers 1…5 it also accepts.
const FSDP_STRATEGIES = ['FULL_SHARD', 'SHARD_GRAD_OP', 'NO_SHARD', 'HYBRID_SHARD', 'HYBRID_SHARD_ZERO2'] as const;
const FC = 'fsdp_config';
const DC = 'deepspeed_config';

export function accelerateInput(
  doc: SourceDocument,
  fileName: string,
  options: EstimateOptions,
  source?: ModelSource,
): ConfigInputResult {
  const begun = beginReading(doc, fileName, 'accelerate', options, source);
  if ('error' in begun) return begun;
  const { f, model } = begun;
  const notes = f.notes;

  const type = f.oneOf(['distributed_type'], DISTRIBUTED, 'NO');
  const machines = options.nnodes ?? f.integer(['num_machines'], 1, 1);
  // num_processes counts all processes on all machines.
  const processes = options.nproc !== undefined ? options.nproc * machines : f.integer(['num_processes'], 1, 1);
  const mp = f.oneOf(['mixed_precision'], ['no', 'fp16', 'bf16', 'fp8'], 'no');
  const dtype: Dtype = mp === 'bf16' || mp === 'fp8' ? 'bfloat16' : mp === 'fp16' ? 'float16' : 'float32';
  if (mp === 'fp8')
    notes.push('fp8 estimated as bf16 (weights and activations outside the fp8 matrix products stay bf16)');
  const gpu = options.gpu ? findGpu(options.gpu) : undefined;
  if (options.gpu && !gpu) return { kind: 'accelerate', error: `${fileName}: GPU "${options.gpu}" is not known` };

  let strategy: ShardingStrategy = 'NO_SHARD';
  let framework: MemoryInput['framework'] = 'pytorch';
  let offload = { optimizer: false, params: false };
  let checkpointing = options.checkpointing ?? 'none';
  let backwardPrefetch: MemoryInput['fsdp']['backwardPrefetch'] = 'BACKWARD_PRE';
  let forwardPrefetch = false;
  let fsdpVersion: 1 | 2 | undefined;
  let gas = 1;
  if (type === 'FSDP') {
    const raw = f.get([FC, 'fsdp_sharding_strategy']);
    const named =
      typeof raw === 'number'
        ? FSDP_STRATEGIES[raw - 1]
        : f.oneOf([FC, 'fsdp_sharding_strategy'], FSDP_STRATEGIES, 'FULL_SHARD');
    if (typeof raw === 'number' && !named) f.oneOf([FC, 'fsdp_sharding_strategy'], [1, 2, 3, 4, 5], 1);
    strategy = named === 'HYBRID_SHARD_ZERO2' ? 'HYBRID_SHARD' : (named ?? 'FULL_SHARD');
    // FSDP2 expresses the strategy as reshard_after_forward: false keeps parameters gathered (ZeRO-2).
    if (f.get([FC, 'fsdp_version']) === 2 && f.get([FC, 'fsdp_reshard_after_forward']) === false)
      strategy = 'SHARD_GRAD_OP';
    const params = f.boolean([FC, 'fsdp_offload_params'], false);
    offload = { optimizer: params, params };
    if (f.boolean([FC, 'fsdp_activation_checkpointing'], false)) checkpointing = options.checkpointing ?? 'every_n';
    const prefetch = f.oneOf(
      [FC, 'fsdp_backward_prefetch'],
      ['BACKWARD_PRE', 'BACKWARD_POST', 'NO_PREFETCH'],
      'BACKWARD_PRE',
    );
    backwardPrefetch = prefetch === 'NO_PREFETCH' ? 'NONE' : prefetch;
    forwardPrefetch = f.boolean([FC, 'fsdp_forward_prefetch'], false);
    // accelerate's FullyShardedDataParallelPlugin: fsdp_version 1 (the default) is FullyShardedDataParallel.
    fsdpVersion = f.oneOf<1 | 2>([FC, 'fsdp_version'], [1, 2], 1);
  } else if (type === 'DEEPSPEED') {
    framework = 'deepspeed';
    strategy = ZERO_STAGE_STRATEGY[f.oneOf([DC, 'zero_stage'], [0, 1, 2, 3], 2)];
    const optim = f.oneOf([DC, 'offload_optimizer_device'], ['none', 'cpu', 'nvme'], 'none');
    const param = f.oneOf([DC, 'offload_param_device'], ['none', 'cpu', 'nvme'], 'none');
    offload = { optimizer: optim !== 'none', params: param !== 'none' };
    gas = f.integer([DC, 'gradient_accumulation_steps'], 1, 1);
    if (f.get([DC, 'deepspeed_config_file']) !== undefined)
      notes.push("deepspeed_config_file is not read; estimated from this file's deepspeed_config fields");
  } else if (type !== 'MULTI_GPU' && type !== 'NO') {
    notes.push(`distributed_type ${type} estimated as data parallel on GPUs`);
  }
  if (f.error) return { kind: 'accelerate', ...f.error };
  const notModelled = accelerateNotModelled((path) => f.get(path));
  if (options.microBatch === undefined)
    notes.push(
      'micro-batch 1 assumed (accelerate configs do not say; give micro_batch=… in a "fsdp-studio:" comment or --micro-batch)',
    );
  // Issue 36: an accelerate config names no script, so a PEFT model made in it (get_peft_model) cannot be known here.
  notes.push(
    'LoRA / PEFT in the training script is not seen (an accelerate config names no script): estimated as full fine-tuning; a TRL or TrainingArguments config with use_peft is estimated with LoRA',
  );

  const input: MemoryInput = {
    ...defaultMemoryInput(model.shape, model.seqLen),
    framework: options.framework ?? framework,
    microBatch: options.microBatch ?? 1,
    gradAccumSteps: gas,
    strategy,
    nprocPerNode: Math.max(1, Math.round(processes / machines)),
    nnodes: machines,
    precision: { param: dtype, reduce: dtype, activation: dtype },
    checkpointing: { policy: checkpointing, everyN: options.everyN ?? 1 },
    offload,
    attention: options.attention ?? 'flash',
    fsdp: { backwardPrefetch, forwardPrefetch, ...(fsdpVersion ? { version: fsdpVersion } : {}) },
    ...(gpu ? { gpu } : {}),
    ...(notModelled.length ? { notModelled } : {}),
  };
  const anchorPath = doc.has(['distributed_type']) ? ['distributed_type'] : [];
  return {
    kind: 'accelerate',
    doc,
    input,
    ...(model.source ? { model: model.source } : {}),
    anchor: doc.rangeOf(anchorPath, 'key'),
    fitAnchor: doc.rangeOf(anchorPath, 'key'),
    notes,
    assignmentsFor: (change) => accelerateAssignments(type, input, change),
  };
}

function accelerateAssignments(type: string, input: MemoryInput, change: MemoryChange): ConfigAssignment[] | string {
  switch (change.knob) {
    case 'microBatch':
      return [{ option: 'micro_batch', value: change.value }];
    case 'strategy':
      if (type === 'DEEPSPEED') {
        const stage = (ZERO_STAGE_STRATEGY as readonly string[]).indexOf(change.value);
        return stage < 0 ? `DeepSpeed has no ${change.value}` : [{ path: [DC, 'zero_stage'], value: stage }];
      }
      if (change.value === 'SHARD_OPTIMIZER')
        return "accelerate's FSDP has no optimizer-only sharding; use DeepSpeed ZeRO-1";
      if (change.value === 'NO_SHARD' && type !== 'FSDP') return [{ path: ['distributed_type'], value: 'MULTI_GPU' }];
      return [
        ...(type !== 'FSDP' ? [{ path: ['distributed_type'], value: 'FSDP' }] : []),
        { path: [FC, 'fsdp_sharding_strategy'], value: change.value },
      ];
    case 'checkpointing':
      if (type === 'FSDP') {
        return [
          { path: [FC, 'fsdp_activation_checkpointing'], value: change.value.policy !== 'none' },
          ...(change.value.policy === 'selective' || change.value.everyN > 1
            ? [
                {
                  option: 'checkpointing',
                  value: change.value.policy === 'every_n' ? `every_n:${change.value.everyN}` : change.value.policy,
                },
              ]
            : []),
        ];
      }
      return [
        {
          option: 'checkpointing',
          value:
            change.value.policy === 'every_n' && change.value.everyN > 1
              ? `every_n:${change.value.everyN}`
              : change.value.policy,
        },
      ];
    case 'precision':
      return [{ path: ['mixed_precision'], value: change.value === 'bfloat16' ? 'bf16' : 'no' }];
    case 'offload':
      if (type === 'FSDP') return [{ path: [FC, 'fsdp_offload_params'], value: change.value }];
      if (type === 'DEEPSPEED') {
        return [
          { path: [DC, 'offload_optimizer_device'], value: change.value ? 'cpu' : 'none' },
          ...(input.strategy === 'FULL_SHARD'
            ? [{ path: [DC, 'offload_param_device'], value: change.value ? 'cpu' : 'none' }]
            : []),
        ];
      }
      return 'offload needs FSDP or DeepSpeed';
    case 'nproc':
      return [{ path: ['num_processes'], value: change.value * input.nnodes }];
    case 'parallel':
      return 'tensor, context, pipeline and expert parallel degrees are set in a torchtitan job config';
    case 'gpu':
      return [{ option: 'gpu', value: change.value }];
  }
}
