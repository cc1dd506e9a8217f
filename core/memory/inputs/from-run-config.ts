// Our run config as an estimate's input: everything is in the file (model, batch, strategy,
// precision, checkpointing, launch); options can only name the GPU or override the world size.
import path from 'node:path';
import {
  checkRunConfigDocument,
  checkRunConfigText,
  resolveRunConfig,
  type ResolvedRunConfig,
} from '../../config/run-config';
import { formatProblem } from '../../config/schema-problems';
import type { SourceDocument } from '../../config/source-document';
import { findGpu, gpuProblem } from '../gpu-presets';
import type { MemoryChange } from '../memory-change';
import { defaultMemoryInput, type MemoryInput } from '../memory-input';
import { parameterCounts, runConfigShape, shapeProblem } from '../model-shape';
import { locate, type ConfigAssignment, type ConfigInputResult } from './config-input';
import type { EstimateOptions } from './estimate-options';

const GiB = 1024 ** 3;

/** `parsed`: the text already parsed (as a run config: YAML 1.2 or JSON by the file's name), so it is not parsed twice. */
export function runConfigInput(
  text: string,
  fileName: string,
  options: EstimateOptions,
  parsed?: SourceDocument,
): ConfigInputResult {
  // The model keys of model.from_hf's folder are filled in: the estimate is the folder's model.
  const { doc, problems, value } = parsed
    ? checkRunConfigDocument(parsed, fileName)
    : checkRunConfigText(text, fileName);
  const error = problems.find((p) => p.severity === 'error');
  if (error) return { kind: 'run-config', error: formatProblem(fileName, error), range: error.range };
  const config = resolveRunConfig(value as ResolvedRunConfig, path.dirname(path.resolve(fileName)));
  // A shape the model cannot have (d_model not divisible by n_heads) gets no numbers, as custom models do.
  const shapeWrong = shapeProblem(runConfigShape(config.model));
  if (shapeWrong)
    return {
      kind: 'run-config',
      ...locate(
        fileName,
        doc,
        ['model', 'n_heads'],
        `${shapeWrong}: no memory estimate for a model that cannot be built`,
      ),
    };
  const notes: string[] = [];
  const input = fromResolved(config, options, notes);
  if (typeof input === 'string') return { kind: 'run-config', error: `${fileName}: ${input}` };
  return {
    kind: 'run-config',
    doc,
    input,
    anchor: doc.rangeOf(['model'], 'key'),
    fitAnchor: doc.rangeOf(['training', 'batch_size_per_gpu'], 'key'),
    notes,
    model: config.model.from_hf
      ? {
          name: path.basename(config.model.from_hf),
          from: path.join(config.model.from_hf, 'config.json'),
          parameters: parameterCounts(input.model).total,
          namedBy: 'model.from_hf',
        }
      : {
          name: input.model.name === 'custom' ? 'the model section' : input.model.name,
          from: `${fileName} (model:)`,
          parameters: parameterCounts(input.model).total,
        },
    assignmentsFor: (change) => runConfigAssignments(doc, change),
  };
}

export function fromResolved(c: ResolvedRunConfig, options: EstimateOptions, notes: string[]): MemoryInput | string {
  const base = defaultMemoryInput(runConfigShape(c.model), c.data.seq_len ?? c.model.max_seq_len);
  const gpuName = options.gpu ?? c.launch.gpu;
  const gpuWrong = gpuName ? gpuProblem(gpuName) : undefined;
  if (gpuWrong) return `launch.gpu: ${gpuWrong}`;
  const gpu = gpuName ? findGpu(gpuName) : undefined;
  const ac = c.activation_checkpointing;
  const strategy = c.fsdp.sharding_strategy ?? 'FULL_SHARD';
  // PyTorch and DeepSpeed estimates are for GPUs, whatever device our runtime would use.
  const device = options.framework && options.framework !== 'fsdp-studio' ? 'cuda' : (c.launch.device ?? 'cpu');
  const input: MemoryInput = {
    ...base,
    framework: options.framework ?? 'fsdp-studio',
    device,
    microBatch: options.microBatch ?? c.training.batch_size_per_gpu,
    gradAccumSteps: c.training.gradient_accumulation_steps ?? 1,
    strategy,
    nprocPerNode: options.nproc ?? c.launch.nproc_per_node ?? 1,
    nnodes: options.nnodes ?? c.launch.nnodes ?? 1,
    ...(c.fsdp.ranks_per_node ? { ranksPerNode: c.fsdp.ranks_per_node } : {}),
    precision: {
      // Our runtime's CPU backend keeps float32 weights in bf16 too: only each matrix product's
      // operands are rounded (native/src/backend/cpu/bf16_gemm.h), so there is no bf16 copy to count.
      param: device === 'cpu' ? 'float32' : (c.mixed_precision.param_dtype ?? 'float32'),
      reduce: c.mixed_precision.reduce_dtype ?? 'float32',
      activation: c.mixed_precision.buffer_dtype ?? 'float32',
    },
    checkpointing: {
      policy: ac.enabled ? (ac.policy ?? 'every_n') : 'none',
      everyN: ac.every_n_layers ?? 1,
      ...(ac.memory_budget_gb ? { budgetBytes: ac.memory_budget_gb * GiB } : {}),
    },
    offload: {
      optimizer: !!c.fsdp.cpu_offload,
      params: !!c.fsdp.cpu_offload && (strategy === 'FULL_SHARD' || strategy === 'HYBRID_SHARD'),
    },
    // Our runtime computes attention with an explicit probability matrix, like eager PyTorch.
    attention: options.attention ?? (options.framework && options.framework !== 'fsdp-studio' ? 'flash' : 'eager'),
    dropout: c.model.dropout ?? 0,
    prefetchBatches: c.data.prefetch_batches ?? 2,
    fsdp: { backwardPrefetch: c.fsdp.backward_prefetch ?? 'BACKWARD_PRE', forwardPrefetch: !!c.fsdp.forward_prefetch },
    ...(gpu ? { gpu } : {}),
  };
  if (options.framework && options.framework !== 'fsdp-studio')
    notes.push(`estimated as ${options.framework} would run this model, not as our runtime`);
  return input;
}

/** The run config's keys for each knob. */
function runConfigAssignments(doc: SourceDocument, change: MemoryChange): ConfigAssignment[] | string {
  switch (change.knob) {
    case 'microBatch':
      return [{ path: ['training', 'batch_size_per_gpu'], value: change.value }];
    case 'strategy': {
      // zero_stage is an alias; setting sharding_strategy alone would contradict it.
      const out: ConfigAssignment[] = [{ path: ['fsdp', 'sharding_strategy'], value: change.value }];
      if (doc.has(['fsdp', 'zero_stage'])) out.push({ path: ['fsdp', 'zero_stage'], value: undefined });
      return out;
    }
    case 'checkpointing':
      if (change.value.policy === 'none') return [{ path: ['activation_checkpointing', 'enabled'], value: false }];
      return [
        { path: ['activation_checkpointing', 'enabled'], value: true },
        { path: ['activation_checkpointing', 'policy'], value: change.value.policy },
        ...(change.value.policy === 'every_n'
          ? [{ path: ['activation_checkpointing', 'every_n_layers'], value: change.value.everyN }]
          : []),
      ];
    case 'precision':
      return ['param_dtype', 'reduce_dtype', 'buffer_dtype'].map((k) => ({
        path: ['mixed_precision', k],
        value: change.value,
      }));
    case 'offload':
      return [{ path: ['fsdp', 'cpu_offload'], value: change.value }];
    case 'nproc':
      return [{ path: ['launch', 'nproc_per_node'], value: change.value }];
    case 'parallel':
      return 'tensor, context, pipeline and expert parallel degrees are set in a torchtitan job config';
    case 'gpu':
      return [{ path: ['launch', 'gpu'], value: change.value }];
  }
}
