// Reading single fields of DeepSpeed and accelerate configs for an estimate: a wrong type is an
// error that names the key and its line; "auto" (filled in by Hugging Face at run time) and
// absence fall back to a default that the estimate's notes mention.
import type { ConfigPath, SourceDocument } from '../../config/source-document';
import type { ModelShape } from '../model-shape';
import { locate, type ConfigInputError, type ConfigKind } from './config-input';
import type { EstimateOptions } from './estimate-options';
import {
  familyOfLayerClass,
  modelFromOptions,
  type ModelFamily,
  type ModelOrigin,
  type ModelSource,
} from './model-from-options';

/** The start of reading a config that does not describe its model: the model from the options. */
export function beginReading(
  doc: SourceDocument,
  fileName: string,
  kind: ConfigKind,
  options: EstimateOptions,
  source?: ModelSource,
): { f: FieldReader; model: { shape: ModelShape; seqLen: number; source?: ModelOrigin } } | ConfigInputError {
  const model = modelFromOptions(options, source, wrappedFamily(doc));
  if ('error' in model) return { kind, error: `${fileName}: ${model.error}` };
  return { f: new FieldReader(doc, fileName, [model.note]), model };
}

/** The layer classes FSDP wraps, where accelerate's and TrainingArguments' fsdp_config name them. */
const WRAP_CLASS_PATHS: string[][] = [
  ['fsdp_config', 'fsdp_transformer_layer_cls_to_wrap'],
  ['fsdp_config', 'transformer_layer_cls_to_wrap'],
];

/** The model family the config's wrap class names (`LlamaDecoderLayer`: Llama), if it names one. */
function wrappedFamily(doc: SourceDocument): ModelFamily | undefined {
  for (const p of WRAP_CLASS_PATHS) {
    let v: unknown = doc.value;
    for (const k of p) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
    // accelerate takes a comma-separated string, TrainingArguments a list.
    const classes =
      typeof v === 'string' ? v.split(',') : Array.isArray(v) ? v.filter((c) => typeof c === 'string') : [];
    for (const cls of classes) {
      const family = familyOfLayerClass(cls, `${p.join('.')}: ${cls.trim()}`);
      if (family) return family;
    }
  }
  return undefined;
}

export class FieldReader {
  /** The first wrong field; reading continues so callers need not check each one. */
  error: ConfigInputError | undefined;

  constructor(
    readonly doc: SourceDocument,
    private readonly fileName: string,
    readonly notes: string[],
  ) {}

  get(path: ConfigPath): unknown {
    let v: unknown = this.doc.value;
    for (const k of path) {
      if (v === null || typeof v !== 'object') return undefined;
      v = (v as Record<string | number, unknown>)[k];
    }
    return v;
  }

  /** A number (DeepSpeed also accepts numeric strings like "5e8"), or the fallback for absent / "auto". */
  number(path: ConfigPath, fallback: number, what = 'a number'): number {
    const v = this.get(path);
    if (v === undefined || v === null) return fallback;
    if (v === 'auto') {
      this.notes.push(`${path.join('.')} is "auto"; assumed ${fallback}`);
      return fallback;
    }
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
      return this.fail(path, `expected ${what}, got ${JSON.stringify(v)}`, fallback);
    return n;
  }

  integer(path: ConfigPath, fallback: number, min = 0): number {
    const n = this.number(path, fallback, `an integer ≥ ${min}`);
    if (!Number.isInteger(n) || n < min)
      return this.fail(path, `expected an integer ≥ ${min}, got ${JSON.stringify(this.get(path))}`, fallback);
    return n;
  }

  boolean(path: ConfigPath, fallback: boolean): boolean {
    const v = this.get(path);
    if (v === undefined || v === null) return fallback;
    if (typeof v === 'boolean') return v;
    // accelerate writes booleans as YAML, but people also write "true"/"false" strings.
    if (v === 'true' || v === 'false') return v === 'true';
    if (v === 'auto') return fallback;
    return this.fail(path, `expected true or false, got ${JSON.stringify(v)}`, fallback);
  }

  oneOf<T extends string | number>(path: ConfigPath, values: readonly T[], fallback: T): T {
    const v = this.get(path);
    if (v === undefined || v === null) return fallback;
    if (values.includes(v as T)) return v as T;
    return this.fail(path, `expected one of ${values.join(', ')}, got ${JSON.stringify(v)}`, fallback);
  }

  private fail<T>(path: ConfigPath, message: string, fallback: T): T {
    this.error ??= locate(this.fileName, this.doc, path, message);
    return fallback;
  }
}
