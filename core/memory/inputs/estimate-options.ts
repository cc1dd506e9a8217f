// What a config does not say but an estimate needs, given on the command line or in a comment in
// the config itself, so the inline hint and the CLI agree:
//   # fsdp-studio: model=llama-2-7b seq_len=4096 micro_batch=4 gpu=H100 nproc=8
//   // fsdp-studio: model=gpt2-355m checkpointing=every_n     (JSON with comments, as DeepSpeed reads it)
// A custom model: `layers=24 d_model=2048 heads=16 vocab=32000 [kv_heads=8 ffn=5632 style=llama]`.
import type { SourceKind } from '../../config/source-document';
import { gpuProblem } from '../gpu-presets';
import type { CheckpointPolicy, Framework } from '../memory-input';

export interface EstimateOptions {
  /** A model preset id (see model-presets.ts). */
  model?: string;
  /** A custom model's numbers; used when `layers` and `d_model` are given. */
  layers?: number;
  dModel?: number;
  heads?: number;
  kvHeads?: number;
  vocab?: number;
  ffn?: number;
  style?: 'gpt' | 'llama';
  seqLen?: number;
  microBatch?: number;
  checkpointing?: Exclude<CheckpointPolicy, 'auto'>;
  everyN?: number;
  attention?: 'flash' | 'eager';
  gpu?: string;
  nproc?: number;
  nnodes?: number;
  /** Estimate the config as another framework would run it (our run config as PyTorch FSDP). */
  framework?: Framework;
}

export interface OptionProblem {
  key: string;
  message: string;
}

type Reader = (value: string) => Partial<EstimateOptions> | string;

// Bounds keep estimates meaningful: beyond them no real run exists, and the numbers mislead.
const int =
  (key: keyof EstimateOptions, min: number, max: number): Reader =>
  (v) =>
    /^\d+$/.test(v) && Number(v) >= min && Number(v) <= max
      ? { [key]: Number(v) }
      : `expected an integer from ${min} to ${max.toLocaleString('en-US')}, got "${v}"`;
const oneOf =
  <T extends string>(key: keyof EstimateOptions, values: readonly T[]): Reader =>
  (v) =>
    values.includes(v as T) ? { [key]: v } : `expected one of ${values.join(', ')}, got "${v}"`;

const MAX_SEQ = 10_000_000;
const READERS: Record<string, Reader> = {
  model: (v) => ({ model: v }),
  layers: int('layers', 1, 10_000),
  n_layers: int('layers', 1, 10_000),
  d_model: int('dModel', 1, 1_000_000),
  heads: int('heads', 1, 100_000),
  n_heads: int('heads', 1, 100_000),
  kv_heads: int('kvHeads', 1, 100_000),
  vocab: int('vocab', 2, 100_000_000),
  vocab_size: int('vocab', 2, 100_000_000),
  ffn: int('ffn', 1, 10_000_000),
  style: oneOf('style', ['gpt', 'llama']),
  seq: int('seqLen', 1, MAX_SEQ),
  seq_len: int('seqLen', 1, MAX_SEQ),
  micro_batch: int('microBatch', 1, 1 << 16),
  checkpointing: (v) => {
    const m = /^(none|selective|every_n)(?::(\d+))?$/.exec(v);
    if (!m) return `expected none, selective, every_n or every_n:N, got "${v}"`;
    return {
      checkpointing: m[1] as 'none' | 'selective' | 'every_n',
      ...(m[2] ? { everyN: Math.max(1, Number(m[2])) } : {}),
    };
  },
  attention: oneOf('attention', ['flash', 'eager']),
  gpu: (v) => {
    const problem = gpuProblem(v);
    return problem ?? { gpu: v };
  },
  nproc: int('nproc', 1, 4096),
  nnodes: int('nnodes', 1, 100_000),
  framework: oneOf('framework', ['fsdp-studio', 'pytorch', 'deepspeed']),
};

export const OPTION_KEYS = Object.keys(READERS);

/** Reads `key=value` words into options; unknown keys and bad values come back as problems. */
export function parseOptionWords(words: string[]): { options: EstimateOptions; problems: OptionProblem[] } {
  const options: EstimateOptions = {};
  const problems: OptionProblem[] = [];
  for (const word of words) {
    const eq = word.indexOf('=');
    const key = (eq > 0 ? word.slice(0, eq) : word).replace(/-/g, '_');
    const reader = READERS[key];
    if (!reader) {
      problems.push({ key, message: `unknown setting "${key}"; known: ${OPTION_KEYS.join(', ')}` });
      continue;
    }
    if (eq < 0) {
      problems.push({ key, message: `"${key}" needs a value: ${key}=…` });
      continue;
    }
    const read = reader(word.slice(eq + 1));
    if (typeof read === 'string') problems.push({ key, message: `${key}: ${read}` });
    else Object.assign(options, read);
  }
  return { options, problems };
}

export interface OptionComment {
  options: EstimateOptions;
  problems: OptionProblem[];
  /** Offset of the comment's first character in the text. */
  offset: number;
}

/** Finds the `fsdp-studio:` comment of a YAML (`#`) or JSON-with-comments (`//`) file. */
export function findOptionComment(text: string): OptionComment | undefined {
  const m = /(?:#|\/\/)[ \t]*fsdp-studio:[ \t]*([^\n]*)/.exec(text);
  if (!m) return undefined;
  const words = m[1]
    .trim()
    .split(/[ \t]+/)
    .filter(Boolean);
  return { ...parseOptionWords(words), offset: m.index };
}

/** Options given later win (the command line over the config's comment). */
export function mergeOptions(...layers: Array<EstimateOptions | undefined>): EstimateOptions {
  return Object.assign({}, ...layers.filter(Boolean)) as EstimateOptions;
}

/**
 * The text with `key=value` set in its `fsdp-studio:` comment, which is added as the first line
 * (`#` for YAML, `//` for JSON with comments, as DeepSpeed's hjson reader accepts) if absent.
 */
export function setOptionInText(text: string, kind: SourceKind, key: string, value: string | number): string {
  const m = /((?:#|\/\/)[ \t]*fsdp-studio:)([^\n\r]*)/.exec(text);
  if (!m) return `${kind === 'json' ? '//' : '#'} fsdp-studio: ${key}=${value}\n${text}`;
  const words = m[2]
    .trim()
    .split(/[ \t]+/)
    .filter(Boolean);
  const at = words.findIndex((w) => w.split('=')[0].replace(/-/g, '_') === key);
  if (at >= 0) words[at] = `${key}=${value}`;
  else words.push(`${key}=${value}`);
  const start = m.index + m[1].length;
  return `${text.slice(0, start)} ${words.join(' ')}${text.slice(start + m[2].length)}`;
}
