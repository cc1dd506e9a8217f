// The model of a DeepSpeed or accelerate config, which do not describe it: the `model=` of the
// config's "fsdp-studio:" comment (or --model) as a preset, a Hugging Face model (path or local cache,
// through a ModelSource the caller gives), or custom numbers; else the model a config or script
// beside it names (model_name_or_path); else GPT-2 124M, assumed and said so.
import { findModelPreset, MODEL_PRESETS } from '../model-presets';
import { parameterCounts, shapeProblem, type ModelShape } from '../model-shape';
import type { EstimateOptions } from './estimate-options';

export const DEFAULT_MODEL_PRESET = 'gpt2-124m';

/** Which model an estimate is for and where it came from, as the hint and the panel say it. */
export interface ModelOrigin {
  name: string;
  /** "preset", "custom", or the config.json file read. */
  from: string;
  parameters: number;
  /** Where the config or a script named it (model_name_or_path), if that is how it was found. */
  namedBy?: string;
  /** The default, because nothing said which model: the editor asks which instead of estimating it. */
  assumed?: boolean;
  /** Why no model was found, in words ("train.py:3 names X, which is not in the local Hugging Face cache"). */
  why?: string;
  /** The family the config's wrap class names, when that is all it says (`LlamaDecoderLayer`: "Llama"). */
  family?: ModelFamily;
}

/** A model family read from the layer class FSDP wraps, and where it was read. */
export interface ModelFamily {
  name: string;
  /** The preset ids of the family (none when no preset is of it). */
  presets: string[];
  /** "fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer". */
  where: string;
}

/**
 * The family a transformer layer class names (LlamaDecoderLayer → Llama, GPT2Block → GPT-2,
 * MistralDecoderLayer → Mistral): the class name without its layer suffix; undefined for a class
 * that names no model (a generic `Block`).
 */
export function familyOfLayerClass(cls: string, where: string): ModelFamily | undefined {
  const stem = /^([A-Z][A-Za-z0-9]*?)(?:DecoderLayer|EncoderLayer|Block|Layer)$/.exec(cls.trim())?.[1];
  if (!stem) return undefined;
  const key = stem.toLowerCase();
  const presets = MODEL_PRESETS.filter((p) => p.id.replace(/[^a-z0-9]/g, '').startsWith(key)).map((p) => p.id);
  return { name: key === 'gpt2' ? 'GPT-2' : stem, presets, where };
}

export type ModelChoice = { shape: ModelShape; seqLen: number; note: string; source?: ModelOrigin } | { error: string };

/** Models beyond the presets: provided by the caller, since finding them reads files. */
export interface ModelSource {
  /** A model named by path or Hugging Face id; undefined when `ref` is neither. */
  resolve(ref: string): ModelChoice | undefined;
  /** The model the config or a script beside it names, when `model=` is absent. */
  named(): { ref: string; where: string } | undefined;
  /** A small file the config names (TrainingArguments' `deepspeed: ds_config.json`); undefined when unreadable. */
  readFile?(absolutePath: string): string | undefined;
}

/** `family`: what the config's wrap class says of the model, when nothing names it. */
export function modelFromOptions(options: EstimateOptions, source?: ModelSource, family?: ModelFamily): ModelChoice {
  if (options.layers !== undefined || options.dModel !== undefined) return withOrigin(customModel(options), 'custom');
  if (options.model) {
    // The model's own config.json (a folder, the local cache) is exact; a preset, matched by its
    // name or its Hugging Face id, answers offline when there is none.
    const found = source?.resolve(options.model);
    if (found && !('error' in found)) return { ...found, seqLen: options.seqLen ?? found.seqLen };
    const preset = findModelPreset(options.model);
    if (preset)
      return withOrigin(
        { shape: preset.shape, seqLen: options.seqLen ?? preset.seqLen, note: `model: preset ${preset.shape.name}` },
        'preset',
      );
    if (found) return found;
    return {
      error: `model "${options.model}" is not a preset (${MODEL_PRESETS.map((p) => p.id).join(', ')}), a folder with a config.json, or a model in the local Hugging Face cache`,
    };
  }
  const named = source?.named();
  if (named) {
    const found = source!.resolve(named.ref);
    if (found && !('error' in found))
      return {
        ...found,
        seqLen: options.seqLen ?? found.seqLen,
        note: `${found.note}, named by ${named.where}`,
        source: { ...found.source!, namedBy: named.where },
      };
    const preset = findModelPreset(named.ref);
    if (preset)
      return withOrigin(
        {
          shape: preset.shape,
          seqLen: options.seqLen ?? preset.seqLen,
          note: `model: preset ${preset.shape.name}, named by ${named.where}`,
        },
        'preset',
        named.where,
      );
  }
  // Nothing names the model: the estimate is made for a stand-in (of the family the wrap class
  // names, when a preset is of it) and said to be one; the editor asks which model instead.
  const preset = findModelPreset(family?.presets[0] ?? DEFAULT_MODEL_PRESET)!;
  const why = named
    ? `${named.where} names "${named.ref}", which is not a preset, a folder or in the local Hugging Face cache`
    : family
      ? `nothing names the model; ${family.where} says a ${family.name}`
      : 'nothing names the model (model_name_or_path, from_pretrained("…") in a script beside the config)';
  return {
    shape: preset.shape,
    seqLen: options.seqLen ?? preset.seqLen,
    note: `model: preset ${preset.shape.name} assumed (${why}; say which with model=… in a "fsdp-studio:" comment or --model)`,
    source: {
      name: preset.shape.name,
      from: 'preset',
      parameters: parameterCounts(preset.shape).total,
      assumed: true,
      why,
      ...(family ? { family } : {}),
    },
  };
}

function withOrigin(choice: ModelChoice, from: string, namedBy?: string): ModelChoice {
  if ('error' in choice) return choice;
  return {
    ...choice,
    source: {
      name: choice.shape.name,
      from,
      parameters: parameterCounts(choice.shape).total,
      ...(namedBy ? { namedBy } : {}),
    },
  };
}

function customModel(o: EstimateOptions): ModelChoice {
  const missing = (['layers', 'dModel', 'heads', 'vocab'] as const).filter((k) => o[k] === undefined);
  if (missing.length)
    return {
      error: `a custom model needs layers, d_model, heads and vocab; missing ${missing.map((k) => (k === 'dModel' ? 'd_model' : k)).join(', ')}`,
    };
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
