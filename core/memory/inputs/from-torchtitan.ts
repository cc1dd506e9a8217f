// A torchtitan job config (TOML) as an estimate's input: the model from [model] name and flavor
// (torchtitan's own flavours, ../parallel/torchtitan-flavours.ts) unless the `fsdp-studio:` comment
// names another (a preset or a Hugging Face config.json); the degrees, schedule and micro-batches from
// [parallelism]; local_batch_size, seq_len and dtypes from [training]; [activation_checkpoint]. The
// world size is not in the file: the comment's nproc × nnodes, else the degrees' product with
// data_parallel_shard_degree -1 taken as 1.
import type { SourceDocument } from '../../config/source-document';
import { findGpu } from '../gpu-presets';
import type { MemoryChange } from '../memory-change';
import { defaultMemoryInput, type CheckpointPolicy, type MemoryInput } from '../memory-input';
import type { ModelShape } from '../model-shape';
import { ndModelFromShape, totalParameters, type NdModel } from '../parallel/nd-model';
import { parallelWorld, type ParallelPlan } from '../parallel/parallel-plan';
import { PIPELINE_SCHEDULES, stagesPerRankOf, type PipelineSchedule } from '../parallel/pipeline';
import { knownFlavours, torchtitanFlavour } from '../parallel/torchtitan-flavours';
import { FieldReader } from './config-fields';
import type { ConfigAssignment, ConfigInputResult } from './config-input';
import type { EstimateOptions } from './estimate-options';
import { modelFromOptions, type ModelOrigin, type ModelSource } from './model-from-options';
import { torchtitanNotModelled } from './not-modelled';

const P = 'parallelism';

export function torchtitanInput(
  doc: SourceDocument,
  fileName: string,
  options: EstimateOptions,
  source?: ModelSource,
): ConfigInputResult {
  const f = new FieldReader(doc, fileName, []);
  const notes = f.notes;
  const model = readModel(f, fileName, options, source);
  if ('error' in model) return { kind: 'torchtitan', ...model };

  const local = f.integer(['training', 'local_batch_size'], 8, 1);
  const seqLen = options.seqLen ?? f.integer(['training', 'seq_len'], 2048, 1);
  const master = f.oneOf(['training', 'dtype'], ['float32', 'bfloat16'] as const, 'float32');
  const compute = f.oneOf(['training', 'mixed_precision_param'], ['bfloat16', 'float32'] as const, 'bfloat16');
  const degree = (key: string) => f.integer([P, key], 1, 1);
  const replicate = degree('data_parallel_replicate_degree');
  const tp = degree('tensor_parallel_degree');
  const cp = degree('context_parallel_degree');
  const pp = degree('pipeline_parallel_degree');
  const ep = degree('expert_parallel_degree');
  const etp = degree('expert_tensor_parallel_degree');
  // -1 (the ranks left over) is the default; FieldReader's numbers are ≥ 0.
  const rawShard = f.get([P, 'data_parallel_shard_degree']);
  const shardWritten =
    rawShard === -1 || rawShard === undefined ? -1 : f.integer([P, 'data_parallel_shard_degree'], 1, 1);
  const given =
    options.nproc !== undefined || options.nnodes !== undefined
      ? (options.nproc ?? 1) * (options.nnodes ?? 1)
      : undefined;
  const others = replicate * tp * cp * pp;
  let shard = shardWritten > 0 ? shardWritten : given !== undefined && given % others === 0 ? given / others : 1;
  if (shardWritten === -1 && given === undefined)
    notes.push(
      `world size not given: data_parallel_shard_degree -1 taken as 1 (${others} GPUs); give nproc=… nnodes=… in a "fsdp-studio:" comment`,
    );
  if (shardWritten === -1 && given !== undefined && given % others !== 0)
    notes.push(`the degrees (${others}) do not divide the world size ${given}; data_parallel_shard_degree taken as 1`);
  shard = Math.max(1, Math.floor(shard));

  const written = f.get([P, 'pipeline_parallel_schedule']);
  const schedule = (PIPELINE_SCHEDULES.find(
    (s) => typeof written === 'string' && s.toLowerCase() === written.toLowerCase(),
  ) ?? '1F1B') as PipelineSchedule;
  const mbs = pp > 1 ? f.integer([P, 'pipeline_parallel_microbatch_size'], 1, 1) : local;
  const layersPerStage = f.get([P, 'pipeline_parallel_layers_per_stage']);
  const reshard = f.oneOf([P, 'fsdp_reshard_after_forward'], ['default', 'always', 'never'] as const, 'default');
  const ac = readCheckpointing(f, notes);
  const converters = f.get(['model', 'converters']);
  if (Array.isArray(converters) && converters.includes('float8'))
    notes.push('float8: estimated as bf16 (float8 matmuls keep bf16 weights and activations outside them)');
  const gpu = options.gpu ? findGpu(options.gpu) : undefined;
  if (options.gpu && !gpu) return { kind: 'torchtitan', error: `${fileName}: GPU "${options.gpu}" is not known` };
  if (f.error) return { kind: 'torchtitan', ...f.error };

  const plan: ParallelPlan = {
    model: model.nd,
    replicate,
    shard,
    tp,
    cp,
    pp,
    ep,
    etp,
    sequenceParallel: tp > 1,
    schedule,
    stagesPerRank:
      pp > 1
        ? stagesPerRankOf(
            schedule,
            typeof layersPerStage === 'number' ? layersPerStage : undefined,
            pp,
            model.nd.nLayers,
          )
        : 1,
    microbatches: pp > 1 ? Math.max(1, Math.floor(local / mbs)) : 1,
    reshardAfterForward: reshard === 'always' || (reshard === 'default' && pp === 1),
    masterDtype: master,
  };
  const input = torchtitanMemoryInput({
    shape: model.shape,
    seqLen,
    microBatch: mbs,
    plan,
    compute,
    checkpointing: ac,
    nproc: options.nproc,
    gpu,
  });
  // What the job sets and the estimate leaves out (./torchtitan-keys.ts), named on the estimate's line.
  const notModelled = torchtitanNotModelled((path) => f.get(path));
  if (notModelled.length) input.notModelled = notModelled;
  const anchorPath = doc.has([P]) ? [P] : doc.has(['training']) ? ['training'] : [];
  const fitPath =
    pp > 1 && doc.has([P, 'pipeline_parallel_microbatch_size'])
      ? [P, 'pipeline_parallel_microbatch_size']
      : doc.has(['training', 'local_batch_size'])
        ? ['training', 'local_batch_size']
        : anchorPath;
  return {
    kind: 'torchtitan',
    doc,
    input,
    model: model.origin,
    anchor: doc.rangeOf(anchorPath, 'key'),
    fitAnchor: doc.rangeOf(fitPath, fitPath.length === 2 ? 'value' : 'key'),
    notes,
    assignmentsFor: (change) => torchtitanAssignments(input, change),
  };
}

function readModel(
  f: FieldReader,
  fileName: string,
  options: EstimateOptions,
  source?: ModelSource,
): { nd: NdModel; shape: ModelShape; origin: ModelOrigin } | { error: string } {
  if (options.model || options.layers !== undefined || options.dModel !== undefined) {
    const chosen = modelFromOptions(options, source);
    if ('error' in chosen) return { error: `${fileName}: ${chosen.error}` };
    const nd = ndModelFromShape(chosen.shape);
    f.notes.push(chosen.note);
    return {
      nd,
      shape: chosen.shape,
      origin: chosen.source ?? { name: chosen.shape.name, from: 'custom', parameters: totalParameters(nd) },
    };
  }
  const name = String(f.get(['model', 'name']) ?? 'llama3');
  const flavor = String(f.get(['model', 'flavor']) ?? 'debugmodel');
  const nd = torchtitanFlavour(name, flavor);
  if (!nd)
    return {
      error: `${fileName}: torchtitan model ${name} flavour ${flavor} is not one the estimator knows (${knownFlavours().join(', ')}); name one in a "fsdp-studio: model=…" comment (a preset or a Hugging Face config.json)`,
    };
  f.notes.push(`model: torchtitan ${name} ${flavor} (torchtitan 0.2.2's definition)`);
  return {
    nd,
    shape: shapeOfNdModel(nd),
    origin: { name: nd.name, from: `torchtitan ${name}/${flavor}`, parameters: totalParameters(nd) },
  };
}

/** A model shape standing for an N-D model where the rest of the estimator wants one (names, counts shown). */
/**
 * The estimator's input for a torchtitan job, from what its TOML (0.2.x) or Python (0.3) config states:
 * one place for how torchtitan's degrees, dtypes and world become our strategy, nodes and precision.
 */
export function torchtitanMemoryInput(c: {
  shape: ModelShape;
  seqLen: number;
  microBatch: number;
  plan: ParallelPlan;
  compute: 'bfloat16' | 'float32';
  checkpointing: MemoryInput['checkpointing'];
  nproc: number | undefined;
  gpu: ReturnType<typeof findGpu>;
}): MemoryInput {
  const { plan } = c;
  const world = parallelWorld(plan);
  const perNode = Math.min(world, c.nproc ?? 8);
  // bf16 master weights compute in bf16 whatever mixed_precision_param says.
  const working = plan.masterDtype === 'bfloat16' ? 'bfloat16' : c.compute;
  return {
    ...defaultMemoryInput(c.shape, c.seqLen),
    framework: 'torchtitan',
    microBatch: c.microBatch,
    gradAccumSteps: 1,
    strategy: plan.shard * plan.cp > 1 ? (plan.replicate > 1 ? 'HYBRID_SHARD' : 'FULL_SHARD') : 'NO_SHARD',
    nprocPerNode: perNode,
    nnodes: Math.max(1, Math.ceil(world / perNode)),
    precision: { param: working, reduce: 'float32', activation: working },
    checkpointing: c.checkpointing,
    parallel: plan,
    ...(c.gpu ? { gpu: c.gpu } : {}),
  };
}

export function shapeOfNdModel(m: NdModel): ModelShape {
  return {
    name: m.name,
    vocabSize: m.vocabSize,
    dModel: m.dModel,
    nLayers: m.nLayers,
    nHeads: m.nHeads,
    nKvHeads: m.nKvHeads,
    ...(m.headDim !== m.dModel / m.nHeads ? { headDim: m.headDim } : {}),
    ffnHidden: m.moe ? m.moe.expertFfn : m.ffnHidden,
    mlp: m.mlp,
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: m.tieEmbeddings,
    ...(m.moe ? { experts: { count: m.moe.experts, perToken: m.moe.topK } } : {}),
  };
}

function readCheckpointing(f: FieldReader, notes: string[]): { policy: CheckpointPolicy; everyN: number } {
  const mode = f.oneOf(
    ['activation_checkpoint', 'mode'],
    ['selective', 'full', 'memory_budget', 'none'] as const,
    'selective',
  );
  if (mode === 'none') return { policy: 'none', everyN: 1 };
  if (mode === 'full') return { policy: 'every_n', everyN: 1 };
  if (mode === 'memory_budget') {
    notes.push('activation_checkpoint.mode memory_budget estimated as op-level selective checkpointing');
    return { policy: 'selective', everyN: 1 };
  }
  const option = String(f.get(['activation_checkpoint', 'selective_ac_option']) ?? '2');
  if (/^\d+$/.test(option) && Number(option) >= 1) return { policy: 'every_n', everyN: Number(option) };
  return { policy: 'selective', everyN: 1 };
}

function torchtitanAssignments(input: MemoryInput, change: MemoryChange): ConfigAssignment[] | string {
  const plan = input.parallel!;
  switch (change.knob) {
    case 'microBatch':
      return plan.pp > 1
        ? [
            { path: [P, 'pipeline_parallel_microbatch_size'], value: change.value },
            { path: ['training', 'local_batch_size'], value: change.value * plan.microbatches },
          ]
        : [{ path: ['training', 'local_batch_size'], value: change.value }];
    case 'checkpointing': {
      const c = change.value;
      if (c.policy === 'none') return [{ path: ['activation_checkpoint', 'mode'], value: 'none' }];
      if (c.policy === 'selective')
        return [
          { path: ['activation_checkpoint', 'mode'], value: 'selective' },
          { path: ['activation_checkpoint', 'selective_ac_option'], value: 'op' },
        ];
      return c.everyN === 1
        ? [{ path: ['activation_checkpoint', 'mode'], value: 'full' }]
        : [
            { path: ['activation_checkpoint', 'mode'], value: 'selective' },
            { path: ['activation_checkpoint', 'selective_ac_option'], value: String(c.everyN) },
          ];
    }
    case 'precision':
      return [{ path: ['training', 'mixed_precision_param'], value: change.value }];
    case 'parallel': {
      // The world size lives in the fsdp-studio comment; a split of the same GPUs leaves it alone.
      const all = degreeAssignments(change.value);
      const sameWorld =
        change.value.replicate * change.value.shard * change.value.tp * change.value.cp * change.value.pp ===
        plan.replicate * plan.shard * plan.tp * plan.cp * plan.pp;
      return sameWorld ? all.filter((a) => 'path' in a) : all;
    }
    case 'nproc':
      return [{ option: 'nproc', value: change.value }];
    case 'gpu':
      return [{ option: 'gpu', value: change.value }];
    case 'strategy':
      return 'torchtitan has no sharding strategy: set the data-parallel shard and replicate degrees';
    case 'offload':
      return [{ path: ['training', 'enable_cpu_offload'], value: change.value }];
  }
}

/** The [parallelism] keys (and the comment's world size) for a set of degrees. */
export function degreeAssignments(d: {
  replicate: number;
  shard: number;
  tp: number;
  cp: number;
  pp: number;
  ep: number;
  schedule?: PipelineSchedule;
  gpusPerNode?: number;
}): ConfigAssignment[] {
  const world = d.replicate * d.shard * d.tp * d.cp * d.pp;
  const perNode = Math.min(world, d.gpusPerNode ?? 8);
  return [
    { path: [P, 'data_parallel_replicate_degree'], value: d.replicate },
    { path: [P, 'data_parallel_shard_degree'], value: d.shard },
    { path: [P, 'tensor_parallel_degree'], value: d.tp },
    { path: [P, 'context_parallel_degree'], value: d.cp },
    { path: [P, 'pipeline_parallel_degree'], value: d.pp },
    ...(d.ep > 1 ? [{ path: [P, 'expert_parallel_degree'], value: d.ep }] : []),
    ...(d.pp > 1 && d.schedule ? [{ path: [P, 'pipeline_parallel_schedule'], value: d.schedule }] : []),
    { option: 'nproc', value: perNode },
    ...(world > perNode ? [{ option: 'nnodes', value: Math.ceil(world / perNode) }] : []),
  ];
}
