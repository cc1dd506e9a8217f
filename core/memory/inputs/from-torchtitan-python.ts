// A torchtitan 0.3 configuration (a Python function returning Trainer.Config) as an estimate's input:
// what python/fsdp_studio/torchtitan_configs.py read from the returned dataclass, turned into the N-D
// estimator's plan as the 0.2.x TOML's [parallelism] / [training] are (./from-torchtitan.ts). The
// model's widths come from the 0.3 model config itself (torchtitan changed flavours between releases:
// debugmodel's vocabulary is 2048 in 0.3); a MoE model falls back to the 0.2.2 flavour table.
import { estimateMemory } from '../estimate';
import { findGpu } from '../gpu-presets';
import type { MemoryEstimate } from '../memory-estimate';
import { type CheckpointPolicy, type MemoryInput, type NotModelled } from '../memory-input';
import { totalParameters, type NdModel } from '../parallel/nd-model';
import { type ParallelPlan } from '../parallel/parallel-plan';
import { PIPELINE_SCHEDULES, stagesPerRankOf, type PipelineSchedule } from '../parallel/pipeline';
import { torchtitanFlavour } from '../parallel/torchtitan-flavours';
import { formatParameters, shortLine, summaryLine } from '../summary';
import { findOptionComment } from './estimate-options';
import { shapeOfNdModel, torchtitanMemoryInput } from './from-torchtitan';

/** The probe's JSON of one Trainer.Config (torchtitan_configs.py `_fields`). */
export interface ProbedTrainerConfig {
  model: { name: string | null; flavor: string | null; shape: ProbedShape | null };
  parallelism: {
    dp_replicate: number;
    dp_shard: number;
    tp: number;
    cp: number;
    pp: number;
    ep: number;
    sequence_parallel: boolean;
    pp_schedule: string;
    pp_microbatch_size: number;
    pp_layers_per_stage: number | null;
    fsdp_reshard_after_forward: string;
  };
  training: {
    local_batch_size: number;
    global_batch_size: number;
    seq_len: number;
    dtype: string;
    mixed_precision_param: string;
    mixed_precision_reduce: string;
    enable_cpu_offload: boolean;
  };
  activation_checkpoint: string;
  compile: { enable: boolean; components: string[] };
  float8: boolean;
  nvfp4: boolean;
}

export interface ProbedShape {
  dim: number;
  vocab_size: number;
  n_layers: number;
  n_heads: number | null;
  n_kv_heads: number | null;
  head_dim: number | null;
  ffn_hidden: number | null;
  qk_norm: boolean;
  moe: boolean;
  tied: boolean;
}

/** One function the probe found: its config, or why it gave none. */
export interface ProbedFunction {
  function: string;
  line: number;
  config?: ProbedTrainerConfig;
  error?: string;
}

/** The probe's whole answer for a file or module. */
export interface ProbeAnswer {
  target: string;
  python: string;
  torchtitan?: string;
  module?: string;
  notes?: string[];
  configs?: ProbedFunction[];
  error?: string;
}

export interface TorchtitanPythonInput {
  input: MemoryInput;
  /** "Llama 3 8B (8.03 B parameters, torchtitan llama3/8B)". */
  model: string;
  notes: string[];
}

/** What the file says beyond its configs: a `# fsdp-studio: nproc=8 nnodes=8 gpu=H100-80GB` comment, as a TOML's. */
export interface TorchtitanPythonOptions {
  gpu?: string;
  nproc?: number;
  nnodes?: number;
}

/**
 * The options for a file's lenses: its `fsdp-studio:` comment's world size and GPU, the GPU chosen in
 * the panel (fsdp.estimator.gpu) where the comment names none.
 */
export function torchtitanPythonOptions(text: string, panelGpu: string | undefined): TorchtitanPythonOptions {
  const comment = findOptionComment(text)?.options ?? {};
  const gpu = comment.gpu ?? panelGpu;
  return {
    ...(gpu ? { gpu } : {}),
    ...(comment.nproc !== undefined ? { nproc: comment.nproc } : {}),
    ...(comment.nnodes !== undefined ? { nnodes: comment.nnodes } : {}),
  };
}

/** The estimator's input for one probed config, with the GPU chosen in the panel (fsdp.estimator.gpu). */
export function torchtitanPythonInput(
  c: ProbedTrainerConfig,
  options: TorchtitanPythonOptions = {},
): TorchtitanPythonInput | { error: string } {
  const notes: string[] = [];
  const model = ndModelOf(c.model, notes);
  if ('error' in model) return model;
  const p = c.parallelism;
  const t = c.training;
  const degree = (n: number, name: string) => {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`parallelism.${name} is ${n}; a degree is an integer ≥ 1`);
    return n;
  };
  let replicate: number, tp: number, cp: number, pp: number, ep: number;
  try {
    replicate = degree(p.dp_replicate, 'data_parallel_replicate_degree');
    tp = degree(p.tp, 'tensor_parallel_degree');
    cp = degree(p.cp, 'context_parallel_degree');
    pp = degree(p.pp, 'pipeline_parallel_degree');
    ep = degree(p.ep, 'expert_parallel_degree');
  } catch (e) {
    return { error: (e as Error).message };
  }
  // -1 is "the ranks left over", which only the launch's world size decides: the config states none,
  // the file's fsdp-studio comment may (nproc × nnodes).
  const others = replicate * tp * cp * pp;
  const world =
    options.nproc !== undefined || options.nnodes !== undefined
      ? (options.nproc ?? 1) * (options.nnodes ?? 1)
      : undefined;
  let shard = p.dp_shard > 0 ? Math.floor(p.dp_shard) : 1;
  if (p.dp_shard <= 0 && world !== undefined && world % others === 0) shard = world / others;
  else if (p.dp_shard <= 0 && world !== undefined)
    notes.push(`the degrees (${others}) do not divide the world size ${world}; data_parallel_shard_degree taken as 1`);
  else if (p.dp_shard <= 0)
    notes.push(
      'data_parallel_shard_degree -1 (the GPUs left over) taken as 1: the config does not state the world size; give it in a "# fsdp-studio: nproc=8 nnodes=…" comment',
    );
  const schedule = (PIPELINE_SCHEDULES.find((s) => s.toLowerCase() === p.pp_schedule.toLowerCase()) ??
    '1F1B') as PipelineSchedule;
  const local = Math.max(1, t.local_batch_size);
  const mbs = pp > 1 ? Math.max(1, p.pp_microbatch_size) : local;
  const master = t.dtype === 'bfloat16' ? 'bfloat16' : 'float32';
  const compute = t.mixed_precision_param === 'float32' ? 'float32' : 'bfloat16';
  const plan: ParallelPlan = {
    model: model.nd,
    replicate,
    shard,
    tp,
    cp,
    pp,
    ep,
    etp: 1,
    sequenceParallel: tp > 1 && p.sequence_parallel,
    schedule,
    stagesPerRank: pp > 1 ? stagesPerRankOf(schedule, p.pp_layers_per_stage ?? undefined, pp, model.nd.nLayers) : 1,
    microbatches: pp > 1 ? Math.max(1, Math.floor(local / mbs)) : 1,
    reshardAfterForward:
      p.fsdp_reshard_after_forward === 'always' || (p.fsdp_reshard_after_forward === 'default' && pp === 1),
    masterDtype: master,
  };
  const gpu = options.gpu ? findGpu(options.gpu) : undefined;
  if (options.gpu && !gpu) return { error: `GPU "${options.gpu}" is not known` };
  const input: MemoryInput = {
    ...torchtitanMemoryInput({
      shape: shapeOfNdModel(model.nd),
      seqLen: t.seq_len,
      microBatch: mbs,
      plan,
      compute,
      checkpointing: checkpointingOf(c.activation_checkpoint, notes),
      nproc: options.nproc,
      gpu,
    }),
    ...notModelledOf(c),
  };
  return { input, model: model.words, notes };
}

/** The lens's words for one probed function: the figure, or why there is none. */
export function torchtitanPythonLens(
  f: ProbedFunction,
  options: TorchtitanPythonOptions = {},
): { title: string; detail: string; estimate?: MemoryEstimate } {
  if (f.error || !f.config) {
    // The editor's line is short: the file's name where it raised; the tooltip has the whole path.
    const short = (f.error ?? 'no config').replace(/\(at (?:[^()]*[\\/])?([^\\/()]+:\d+)\)$/, '(at $1)');
    return { title: `no estimate: ${short}`, detail: `${f.function}(): ${f.error ?? 'no config'}` };
  }
  const read = torchtitanPythonInput(f.config, options);
  if ('error' in read) return { title: `no estimate: ${read.error}`, detail: `${f.function}(): ${read.error}` };
  const estimate = estimateMemory(read.input);
  const notes = read.notes.length ? `\n${read.notes.join('\n')}` : '';
  return {
    title: `${shortLine(estimate)} — ${read.model.split(' (')[0]}`,
    detail: `${f.function}(): ${summaryLine(estimate)} — for ${read.model}, torchtitan 0.3 config${notes}`,
    estimate,
  };
}

function ndModelOf(
  m: ProbedTrainerConfig['model'],
  notes: string[],
): { nd: NdModel; words: string } | { error: string } {
  const name = m.name ?? 'model';
  const flavor = m.flavor ?? '?';
  const s = m.shape;
  if (s && !s.moe && s.n_heads) {
    const heads = s.n_heads;
    const nd: NdModel = {
      name: `torchtitan ${name} ${flavor}`,
      vocabSize: s.vocab_size,
      dModel: s.dim,
      nLayers: s.n_layers,
      nHeads: heads,
      nKvHeads: s.n_kv_heads ?? heads,
      headDim: s.head_dim ?? s.dim / heads,
      ffnHidden: s.ffn_hidden ?? 4 * s.dim,
      mlp: 'swiglu',
      tieEmbeddings: s.tied,
    };
    return { nd, words: `${nd.name} (${formatParameters(totalParameters(nd))} parameters, its 0.3 model config)` };
  }
  const known = torchtitanFlavour(name, flavor);
  if (!known)
    return {
      error: `torchtitan model ${name} flavour ${flavor}: ${s?.moe ? 'a MoE model whose 0.3 config is not read yet' : 'not a decoder the estimator reads'}, and not one of torchtitan 0.2.2's flavours it knows`,
    };
  notes.push(`model: torchtitan ${name} ${flavor} as torchtitan 0.2.2 defined it (its 0.3 config is not read yet)`);
  return {
    nd: known,
    words: `${known.name} (${formatParameters(totalParameters(known))} parameters, torchtitan 0.2.2's ${name}/${flavor})`,
  };
}

function checkpointingOf(mode: string, notes: string[]): { policy: CheckpointPolicy; everyN: number } {
  if (mode === 'none') return { policy: 'none', everyN: 1 };
  if (mode === 'full') return { policy: 'every_n', everyN: 1 };
  if (mode === 'memory_budget') notes.push('MemoryBudgetAC estimated as op-level selective checkpointing');
  else if (mode !== 'selective') notes.push(`activation checkpointing ${mode} estimated as op-level selective`);
  // 0.3's SelectiveAC is per-op (save the expensive ops' outputs, recompute every second matmul).
  return { policy: 'selective', everyN: 1 };
}

function notModelledOf(c: ProbedTrainerConfig): { notModelled?: NotModelled[] } {
  const out: NotModelled[] = [];
  if (c.float8) out.push({ key: 'Float8 / MXFP8 converter', what: 'float8 matmuls', effect: 'lowers' });
  if (c.nvfp4) out.push({ key: 'NVFP4 converter', what: 'NVFP4 matmuls', effect: 'lowers' });
  if (c.compile.enable && c.compile.components.includes('model'))
    out.push({ key: 'compile.enable = True', what: 'torch.compile', effect: 'lowers' });
  if (c.training.enable_cpu_offload)
    out.push({ key: 'training.enable_cpu_offload = True', what: 'CPU offload', effect: 'lowers' });
  return out.length ? { notModelled: out } : {};
}
