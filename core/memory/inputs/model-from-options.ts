// The model of a DeepSpeed or accelerate config, which do not describe it: a preset, or the numbers.
import { findModelPreset, MODEL_PRESETS } from '../model-presets';
import { shapeProblem, type ModelShape } from '../model-shape';
import type { EstimateOptions } from './estimate-options';

export const DEFAULT_MODEL_PRESET = 'gpt2-124m';

export type ModelChoice = { shape: ModelShape; seqLen: number; note: string } | { error: string };

export function modelFromOptions(options: EstimateOptions): ModelChoice {
  if (options.layers !== undefined || options.dModel !== undefined) return customModel(options);
  const id = options.model ?? DEFAULT_MODEL_PRESET;
  const preset = findModelPreset(id);
  if (!preset) return { error: `model "${id}" is not a preset; presets: ${MODEL_PRESETS.map((p) => p.id).join(', ')}` };
  const note = options.model ? `model: preset ${preset.shape.name}` : `model: preset ${preset.shape.name} assumed (say which with model=… in a "fsdp-studio:" comment or --model)`;
  return { shape: preset.shape, seqLen: options.seqLen ?? preset.seqLen, note };
}

function customModel(o: EstimateOptions): ModelChoice {
  const missing = (['layers', 'dModel', 'heads', 'vocab'] as const).filter((k) => o[k] === undefined);
  if (missing.length) return { error: `a custom model needs layers, d_model, heads and vocab; missing ${missing.map((k) => (k === 'dModel' ? 'd_model' : k)).join(', ')}` };
  const llama = o.style === 'llama';
  const d = o.dModel!;
  const seqLen = o.seqLen ?? 2048;
  const shape: ModelShape = {
    name: 'custom',
    vocabSize: o.vocab!,
    dModel: d,
    nLayers: o.layers!,
    nHeads: o.heads!,
    nKvHeads: o.kvHeads ?? o.heads!,
    ffnHidden: o.ffn ?? 4 * d,
    mlp: llama ? 'swiglu' : 'gelu',
    norm: llama ? 'rmsnorm' : 'layernorm',
    bias: !llama,
    positionEmbeddings: llama ? 0 : seqLen,
    tieEmbeddings: !llama,
  };
  const problem = shapeProblem(shape);
  if (problem) return { error: `custom model: ${problem}` };
  return { shape, seqLen, note: `model: custom ${llama ? 'Llama' : 'GPT'}-style, ${o.layers} layers × d_model ${d}` };
}
