// A DeepSpeed ds_config.json as an estimate's input. DeepSpeed's config has the batch, ZeRO stage,
// precision, offload and bucket sizes; the model, sequence length, world size and GPU come from
// the options (a `// fsdp-studio:` comment or the command line). Keys as documented at
// https://www.deepspeed.ai/docs/config-json/.
import { ZERO_STAGE_STRATEGY } from '../../config/run-config';
import type { SourceDocument } from '../../config/source-document';
import { findGpu } from '../gpu-presets';
import type { MemoryChange } from '../memory-change';
import { defaultMemoryInput, ZERO_DEFAULTS, type MemoryInput } from '../memory-input';
import { beginReading } from './config-fields';
import type { ConfigAssignment, ConfigInputResult } from './config-input';
import type { EstimateOptions } from './estimate-options';
import type { ModelSource } from './model-from-options';
import { deepspeedNotModelled } from './not-modelled';

const ZO = 'zero_optimization';

export function deepspeedInput(
  doc: SourceDocument,
  fileName: string,
  options: EstimateOptions,
  source?: ModelSource,
): ConfigInputResult {
  const begun = beginReading(doc, fileName, 'deepspeed', options, source);
  if ('error' in begun) return begun;
  const { f, model } = begun;
  const notes = f.notes;

  const stage = f.oneOf([ZO, 'stage'], [0, 1, 2, 3], 0);
  const gas = f.integer(['gradient_accumulation_steps'], 1, 1);
  const trainBatch = f.get(['train_batch_size']);
  let micro =
    f.get(['train_micro_batch_size_per_gpu']) === 'auto'
      ? undefined
      : f.integer(['train_micro_batch_size_per_gpu'], 0, 0) || undefined;
  // World size: given, or implied by train_batch_size = micro × accumulation × world.
  let world = (options.nproc ?? 0) * (options.nnodes ?? 1) || undefined;
  if (world === undefined && micro && typeof trainBatch === 'number' && trainBatch % (micro * gas) === 0)
    world = trainBatch / (micro * gas);
  world ??= 1;
  if (micro === undefined && typeof trainBatch === 'number' && trainBatch % (gas * world) === 0)
    micro = trainBatch / (gas * world);
  if (options.microBatch) micro = options.microBatch;
  if (micro === undefined) {
    micro = 1;
    notes.push('micro-batch 1 assumed (train_micro_batch_size_per_gpu is absent or "auto")');
  }
  const nnodes = options.nnodes ?? 1;

  const bf16 = f.boolean(['bf16', 'enabled'], false) || f.boolean(['bfloat16', 'enabled'], false);
  const fp16 = f.boolean(['fp16', 'enabled'], false);
  const dtype = bf16 ? 'bfloat16' : fp16 ? 'float16' : 'float32';
  const comm = f.oneOf(
    ['communication_data_type'],
    ['fp32', 'fp16', 'bf16'],
    dtype === 'float32' ? 'fp32' : dtype === 'float16' ? 'fp16' : 'bf16',
  );
  const offloadOptimizer = f.oneOf(
    [ZO, 'offload_optimizer', 'device'],
    ['cpu', 'nvme', 'none'],
    f.boolean([ZO, 'cpu_offload'], false) ? 'cpu' : 'none',
  );
  // cpu_offload_param: the old spelling of offload_param.device cpu (DeepSpeed still reads it).
  const offloadParam = f.oneOf(
    [ZO, 'offload_param', 'device'],
    ['cpu', 'nvme', 'none'],
    f.boolean([ZO, 'cpu_offload_param'], false) ? 'cpu' : 'none',
  );
  const gpuName = options.gpu;
  const gpu = gpuName ? findGpu(gpuName) : undefined;
  if (gpuName && !gpu) return { kind: 'deepspeed', error: `${fileName}: GPU "${gpuName}" is not known` };

  const input: MemoryInput = {
    ...defaultMemoryInput(model.shape, model.seqLen),
    framework: options.framework ?? 'deepspeed',
    microBatch: micro,
    gradAccumSteps: gas,
    strategy: ZERO_STAGE_STRATEGY[stage],
    nprocPerNode: Math.max(1, Math.round(world / nnodes)),
    nnodes,
    precision: {
      param: dtype,
      reduce: comm === 'fp32' ? 'float32' : comm === 'fp16' ? 'float16' : 'bfloat16',
      activation: dtype,
    },
    checkpointing: { policy: options.checkpointing ?? 'none', everyN: options.everyN ?? 1 },
    offload: { optimizer: offloadOptimizer !== 'none', params: offloadParam !== 'none' },
    attention: options.attention ?? 'flash',
    zero: {
      reduceBucketSize: f.number([ZO, 'reduce_bucket_size'], ZERO_DEFAULTS.reduceBucketSize),
      allgatherBucketSize: f.number([ZO, 'allgather_bucket_size'], ZERO_DEFAULTS.allgatherBucketSize),
      // DeepSpeed takes each stage-3 key with or without its stage3_ prefix (the prefixed one wins).
      prefetchBucketSize: f.number(
        [ZO, 'stage3_prefetch_bucket_size'],
        f.number([ZO, 'prefetch_bucket_size'], ZERO_DEFAULTS.prefetchBucketSize),
      ),
      maxLiveParameters: f.number(
        [ZO, 'stage3_max_live_parameters'],
        f.number([ZO, 'max_live_parameters'], ZERO_DEFAULTS.maxLiveParameters),
      ),
      paramPersistenceThreshold: f.number(
        [ZO, 'stage3_param_persistence_threshold'],
        f.number([ZO, 'param_persistence_threshold'], ZERO_DEFAULTS.paramPersistenceThreshold),
      ),
      contiguousGradients: f.boolean([ZO, 'contiguous_gradients'], ZERO_DEFAULTS.contiguousGradients),
      overlapComm: f.boolean([ZO, 'overlap_comm'], false),
    },
    ...(gpu ? { gpu } : {}),
  };
  if (f.error) return { kind: 'deepspeed', ...f.error };
  const notModelled = deepspeedNotModelled((path) => f.get(path));
  if (notModelled.length) input.notModelled = notModelled;
  if (options.nproc === undefined)
    notes.push(
      world > 1
        ? `${world} GPUs, from train_batch_size ÷ (micro-batch × accumulation)`
        : '1 GPU assumed (say how many with nproc=… in a "fsdp-studio:" comment or --nproc)',
    );
  if (options.checkpointing === undefined)
    notes.push(
      'no activation checkpointing assumed (it is set in model code; say checkpointing=every_n in the comment if you use it)',
    );
  const anchorPath = doc.has([ZO])
    ? [ZO]
    : doc.has(['train_micro_batch_size_per_gpu'])
      ? ['train_micro_batch_size_per_gpu']
      : [];
  const fitPath = doc.has(['train_micro_batch_size_per_gpu']) ? ['train_micro_batch_size_per_gpu'] : anchorPath;
  return {
    kind: 'deepspeed',
    doc,
    input,
    ...(model.source ? { model: model.source } : {}),
    anchor: doc.rangeOf(anchorPath, 'key'),
    fitAnchor: doc.rangeOf(fitPath, 'key'),
    notes,
    assignmentsFor: (change) => deepspeedAssignments(doc, input, change),
  };
}

function deepspeedAssignments(
  doc: SourceDocument,
  input: MemoryInput,
  change: MemoryChange,
): ConfigAssignment[] | string {
  switch (change.knob) {
    case 'microBatch': {
      const out: ConfigAssignment[] = [{ path: ['train_micro_batch_size_per_gpu'], value: change.value }];
      // Keep DeepSpeed's batch identity: train_batch_size = micro × accumulation × world.
      if (typeof valueAt(doc, 'train_batch_size') === 'number')
        out.push({
          path: ['train_batch_size'],
          value: change.value * input.gradAccumSteps * input.nprocPerNode * input.nnodes,
        });
      return out;
    }
    case 'strategy': {
      const stage = (ZERO_STAGE_STRATEGY as readonly string[]).indexOf(change.value);
      if (stage < 0) return `DeepSpeed has no ${change.value}`;
      return [{ path: [ZO, 'stage'], value: stage }];
    }
    case 'precision':
      return [
        { path: ['bf16', 'enabled'], value: change.value === 'bfloat16' },
        ...(doc.has(['fp16', 'enabled']) ? [{ path: ['fp16', 'enabled'], value: false }] : []),
      ];
    case 'offload':
      return [
        { path: [ZO, 'offload_optimizer', 'device'], value: change.value ? 'cpu' : 'none' },
        ...(input.strategy === 'FULL_SHARD'
          ? [{ path: [ZO, 'offload_param', 'device'], value: change.value ? 'cpu' : 'none' }]
          : []),
      ];
    case 'checkpointing':
      return [
        {
          option: 'checkpointing',
          value:
            change.value.policy === 'every_n' && change.value.everyN > 1
              ? `every_n:${change.value.everyN}`
              : change.value.policy,
        },
      ];
    case 'nproc':
      return [{ option: 'nproc', value: change.value }];
    case 'parallel':
      return 'tensor, context, pipeline and expert parallel degrees are set in a torchtitan job config';
    case 'gpu':
      return [{ option: 'gpu', value: change.value }];
  }
}

function valueAt(doc: SourceDocument, key: string): unknown {
  return doc.value && typeof doc.value === 'object' ? (doc.value as Record<string, unknown>)[key] : undefined;
}
