// "FSDP: New run config": a commented run config for a model size and a target (a GPU, or this
// machine's CPU). The sharding strategy and the micro-batch are chosen with the memory estimator:
// the least sharding that fits, then the largest power-of-two micro-batch (at most 32) that fits,
// activation checkpointing only when nothing fits without it. On the CPU the target is this
// machine's memory shared by the ranks, less a tenth kept for the system and the editor.
import { GPU_PRESETS, hostTarget, type GpuSpec } from '../memory/gpu-presets';
import { readConfigForEstimate } from '../memory/inputs/read-config';
import { isConfigInputError } from '../memory/inputs/config-input';
import { estimateMemory } from '../memory/estimate';
import { maxMicroBatch } from '../memory/inverse-questions';
import { MODEL_PRESETS } from '../memory/model-presets';
import { gib } from '../memory/summary';

export interface NewRunConfigModel {
  id: string;
  label: string;
  d_model: number;
  n_layers: number;
  n_heads: number;
  vocab_size: number;
  max_seq_len: number;
  /** Token files made by samples/prepare-data.ts for this vocabulary. */
  data: 'byte' | 'gpt2';
}

/** The model sizes our runtime's GPT (LayerNorm, GELU, tied embeddings) can train: tiny and the GPT-2 family. */
export const NEW_CONFIG_MODELS: readonly NewRunConfigModel[] = [
  {
    id: 'tiny',
    label: 'tiny (0.8M, byte-level, trains on a CPU in a minute)',
    d_model: 128,
    n_layers: 4,
    n_heads: 4,
    vocab_size: 256,
    max_seq_len: 128,
    data: 'byte',
  },
  ...MODEL_PRESETS.filter((p) => p.shape.mlp === 'gelu' && p.shape.norm === 'layernorm').map((p) => ({
    id: p.id,
    label: p.shape.name,
    d_model: p.shape.dModel,
    n_layers: p.shape.nLayers,
    n_heads: p.shape.nHeads,
    vocab_size: p.shape.vocabSize,
    max_seq_len: p.seqLen,
    data: 'gpt2' as const,
  })),
];

export interface NewRunConfigChoice {
  model: string;
  /** A GPU preset id, or "cpu". */
  target: string;
  /** Processes (GPUs, or CPU ranks) on this node. */
  ranks: number;
  /** This machine's memory, for a CPU target (os.totalmem()). */
  hostMemoryBytes?: number;
}

/** The share of host memory a generated CPU config may plan for (the rest is the system's and the editor's). */
export const HOST_SHARE = 0.9;

export const NEW_CONFIG_TARGETS: readonly string[] = ['cpu', ...GPU_PRESETS.map((g) => g.id)];

const STRATEGIES = ['NO_SHARD', 'SHARD_GRAD_OP', 'FULL_SHARD'] as const;

export function newRunConfigText(choice: NewRunConfigChoice): string {
  const model = NEW_CONFIG_MODELS.find((m) => m.id === choice.model);
  if (!model)
    throw new Error(`unknown model "${choice.model}"; known: ${NEW_CONFIG_MODELS.map((m) => m.id).join(', ')}`);
  const gpu = choice.target === 'cpu' ? undefined : GPU_PRESETS.find((g) => g.id === choice.target);
  if (choice.target !== 'cpu' && !gpu)
    throw new Error(`unknown target "${choice.target}"; known: ${NEW_CONFIG_TARGETS.join(', ')}`);
  const ranks = Math.max(1, Math.floor(choice.ranks));
  if (gpu) return render(model, gpu, ranks, planFor(model, gpu, ranks, gpu));
  if (!choice.hostMemoryBytes) throw new Error("a CPU target needs this machine's memory (hostMemoryBytes)");
  const share = hostTarget(Math.floor((choice.hostMemoryBytes * HOST_SHARE) / ranks));
  return render(
    model,
    undefined,
    ranks,
    planFor(model, undefined, ranks, {
      ...share,
      name: `${gib(share.memoryBytes)} GiB, ${Math.round(HOST_SHARE * 100)}% of this machine's memory / ${ranks} rank${ranks > 1 ? 's' : ''}`,
    }),
  );
}

interface Plan {
  strategy: string;
  microBatch: number;
  checkpointing: boolean;
  note: string;
}

/** The plan for `target` (a GPU, or a rank's share of host memory): what fits, least costly first. */
function planFor(model: NewRunConfigModel, gpu: GpuSpec | undefined, ranks: number, target: GpuSpec): Plan {
  const candidates = ranks > 1 ? STRATEGIES : (['NO_SHARD'] as const);
  const per = gpu ? 'GPU' : 'rank';
  for (const checkpointing of [false, true]) {
    for (const strategy of candidates) {
      const input = estimateInput(model, gpu, ranks, strategy, checkpointing);
      if (!input) continue;
      const fit = maxMicroBatch(input, target.memoryBytes);
      if (fit < 1) continue;
      const microBatch = 2 ** Math.floor(Math.log2(Math.min(fit, gpu ? 32 : 16)));
      const peak = estimateMemory({ ...input, microBatch }).peak.total;
      return {
        strategy,
        microBatch,
        checkpointing,
        note: `estimated peak ${gib(peak)} GiB per ${per} of ${gpu ? `${gib(target.memoryBytes)} GiB` : target.name} (largest micro-batch that fits: ${fit})`,
      };
    }
  }
  const where = gpu ? gpu.name : target.name;
  return {
    strategy: ranks > 1 ? 'FULL_SHARD' : 'NO_SHARD',
    microBatch: 1,
    checkpointing: true,
    note: `does not fit ${where} even with one sequence per ${per} and activation checkpointing: ${gpu ? 'add GPUs (launch.nproc_per_node)' : 'use fewer ranks'} or pick a smaller model`,
  };
}

function estimateInput(
  model: NewRunConfigModel,
  gpu: GpuSpec | undefined,
  ranks: number,
  strategy: string,
  checkpointing: boolean,
) {
  const draft = render(model, gpu, ranks, { strategy, microBatch: 1, checkpointing, note: '' });
  const r = readConfigForEstimate(draft, 'new.fsdp.yaml');
  return isConfigInputError(r) ? undefined : r.input;
}

function render(model: NewRunConfigModel, gpu: GpuSpec | undefined, ranks: number, plan: Plan): string {
  const device = gpu ? 'cuda' : 'cpu';
  const dtype = gpu ? 'bfloat16' : 'float32';
  const lr = model.d_model >= 1024 ? 0.0002 : model.d_model >= 768 ? 0.0006 : 0.003;
  return `# ${model.label} on ${gpu ? `${ranks} × ${gpu.name}` : `${ranks} CPU rank${ranks > 1 ? 's' : ''}`}, written by "FSDP: New run config".
# ${plan.note}
# Hover any key for what it means; the problems view lists what the checks find.
name: ${model.id}-${gpu ? gpu.id.toLowerCase() : 'cpu'}
model:
  d_model: ${model.d_model}        # hidden size; n_heads must divide it
  n_layers: ${model.n_layers}
  n_heads: ${model.n_heads}
  vocab_size: ${model.vocab_size}${model.data === 'byte' ? '     # byte-level tokens' : '   # GPT-2 BPE'}
  max_seq_len: ${model.max_seq_len}
data:
  # Token files from Debian's fortunes corpus: node --import tsx samples/prepare-data.ts${model.data === 'gpt2' ? ' --tokenizer gpt2' : ''}
  train: data/fortunes-${model.data}-train.tok
  val: data/fortunes-${model.data}-val.tok
training:
  batch_size_per_gpu: ${plan.microBatch}
  gradient_accumulation_steps: 1
  max_steps: 1000
  learning_rate: ${lr}
  schedule: warmup_cosine
  warmup_steps: 100
fsdp:
  sharding_strategy: ${plan.strategy}   # NO_SHARD (DDP) < SHARD_GRAD_OP (ZeRO-2) < FULL_SHARD (ZeRO-3)
mixed_precision:
  param_dtype: ${dtype}
  reduce_dtype: ${dtype === 'bfloat16' ? 'float32' : dtype}
activation_checkpointing:
  enabled: ${plan.checkpointing}
checkpointing:
  save_every_n_steps: 500
logging:
  every_n_steps: 10
  eval_every_n_steps: 250
launch:
  target: local
  device: ${device}
  nproc_per_node: ${ranks}${gpu ? `\n  gpu: ${gpu.id}` : ''}
`;
}
