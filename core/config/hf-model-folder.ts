// A Hugging Face model folder as a run config's model section: its config.json read once, here, and
// mapped to the run config's model keys, so the runtime and the editor never read Hugging Face's
// format. The family the native runtime trains is the pre-norm RMSNorm / RoPE / SwiGLU decoder —
// LlamaForCausalLM (SmolLM2 is one), MistralForCausalLM without a sliding window (the same
// network: run as architecture llama), Qwen3ForCausalLM (per-head q/k norm, head_dim apart from
// hidden_size) — and GPT-2. Anything else is refused by the field that says so (model_type, a MoE
// expert count, a sliding window, a rope scaling type), before anything starts.
// Field names and defaults are transformers' (5.x configuration_{llama,mistral,qwen3,gpt2}.py):
// both the 4.x spelling (rope_theta + rope_scaling) and 5.x's rope_parameters are read.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';

/** config.json is a few KB; a larger file is not a model's config, and is never read whole. */
export const HF_CONFIG_MAX_BYTES = 1 << 20;

/** The run config's model keys a folder gives (core/schemas/run-config.schema.json, ModelConfig). */
export type HfRunModel = Record<string, unknown>;

export interface HfFolderModel {
  /** The model section, every key the folder decides. */
  model: HfRunModel;
  /** The absolute config.json read. */
  configFile: string;
  /** What the folder holds, for messages: "LlamaForCausalLM (llama)". */
  described: string;
}

export interface HfFolderError {
  error: string;
  /** The config.json key at fault, when one is. */
  key?: string;
}

/** Reads `dir`/config.json (or `dir` itself when it names a config.json file) as a model section. */
export function readHfModelFolder(dir: string): HfFolderModel | HfFolderError {
  const folder = path.resolve(dir);
  let text: string;
  const file = path.basename(folder) === 'config.json' ? folder : path.join(folder, 'config.json');
  try {
    text = readBoundedRegularFile(file, HF_CONFIG_MAX_BYTES);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      return {
        error: tryStatDir(folder)
          ? `${folder} has no config.json: not a Hugging Face model folder`
          : `${folder}: no such folder`,
      };
    if (code === 'ENOTDIR') return { error: `${folder} is a file: give the model's folder or its config.json` };
    return { error: `${file}: ${(e as Error).message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { error: `${file}: not JSON: ${(e as Error).message}` };
  }
  const mapped = runConfigModelFromHf(json);
  if ('error' in mapped) return { ...mapped, error: `${file}: ${mapped.error}` };
  return { ...mapped, configFile: file };
}

/** A parsed config.json as a model section, or why the runtime cannot train it (naming the key). */
export function runConfigModelFromHf(json: unknown): { model: HfRunModel; described: string } | HfFolderError {
  if (!json || typeof json !== 'object' || Array.isArray(json)) return { error: 'not a JSON object' };
  const c = json as Record<string, unknown>;
  const arch = Array.isArray(c.architectures) && typeof c.architectures[0] === 'string' ? c.architectures[0] : '';
  const type = typeof c.model_type === 'string' ? c.model_type : undefined;
  const family = type ?? FAMILY_OF_ARCHITECTURE[arch];
  if (!family)
    return {
      error: `names no model_type${arch ? `, and architectures ${JSON.stringify(arch)} is not one the runtime trains` : ''} (${TRAINED})`,
      key: 'model_type',
    };
  if (!(family in READERS)) {
    const why = NOT_TRAINED[family] ?? 'not an architecture the native runtime trains';
    return { error: `model_type ${JSON.stringify(family)}: ${why} (it trains ${TRAINED})`, key: 'model_type' };
  }
  if (arch && FAMILY_OF_ARCHITECTURE[arch] !== family)
    return {
      error: `architectures ${JSON.stringify(arch)} is not model_type ${JSON.stringify(family)}'s causal LM (${TRAINED})`,
      key: 'architectures',
    };
  const described = `${arch || family} (${family})`;
  try {
    return { model: READERS[family](new Fields(c)), described };
  } catch (e) {
    if (e instanceof Refused) return { error: `${described}: ${e.message}`, key: e.key };
    throw e;
  }
}

const TRAINED = 'LlamaForCausalLM, MistralForCausalLM, Qwen3ForCausalLM, GPT2LMHeadModel';

const FAMILY_OF_ARCHITECTURE: Record<string, string> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
  Qwen3ForCausalLM: 'qwen3',
  GPT2LMHeadModel: 'gpt2',
};

/** Why known neighbours of the family are refused, by model_type. */
const NOT_TRAINED: Record<string, string> = {
  gemma: "Gemma's GeGLU MLP and scaled embeddings are not the runtime's decoder",
  gemma2: "Gemma 2's soft-capped logits and sliding-window layers are not the runtime's decoder",
  gemma3: "Gemma 3's sliding-window layers and GeGLU MLP are not the runtime's decoder",
  gemma3_text: "Gemma 3's sliding-window layers and GeGLU MLP are not the runtime's decoder",
  qwen2: "Qwen2's q/k/v biases without the rest are not the runtime's decoder (it trains Qwen3's)",
  qwen3_moe: 'a mixture of experts (num_experts): the runtime trains dense models',
  qwen3_next: "Qwen3-Next's linear attention (Gated DeltaNet layers) and experts are not the runtime's decoder",
  qwen3_5: "Qwen3.5's linear attention layers are not the runtime's decoder",
  qwen3_5_moe: "Qwen3.5's linear attention layers and experts are not the runtime's decoder",
  mixtral: 'a mixture of experts (num_local_experts): the runtime trains dense models',
};

class Refused extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
  }
}

/** Typed reads of config.json's fields, each refusal naming its key. */
class Fields {
  constructor(readonly c: Record<string, unknown>) {}

  has(key: string): boolean {
    return this.c[key] !== undefined && this.c[key] !== null;
  }

  /** A positive whole number; `fallback` is transformers' default (undefined: the key is needed). */
  int(key: string, fallback?: number): number {
    const v = this.c[key];
    if (v === undefined || v === null) {
      if (fallback === undefined) throw new Refused(key, 'missing (a positive whole number is needed)');
      return fallback;
    }
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0)
      throw new Refused(key, `${JSON.stringify(v)} is not a positive whole number`);
    return v;
  }

  positive(key: string, fallback: number): number {
    const v = this.c[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
      throw new Refused(key, `${JSON.stringify(v)} is not a positive number`);
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.c[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') throw new Refused(key, `${JSON.stringify(v)} is not true or false`);
    return v;
  }

  /** A key whose only trainable value is `expected` (absent means transformers' default, which is). */
  only(key: string, expected: unknown, why: string): void {
    const v = this.c[key];
    if (v !== undefined && v !== null && v !== expected) throw new Refused(key, `${JSON.stringify(v)}: ${why}`);
  }
}

const READERS: Record<string, (f: Fields) => HfRunModel> = {
  llama: (f) => decoder(f, 'llama', { kvHeadsDefault: undefined, headDimDefault: undefined, positions: 2048 }),
  mistral: (f) => {
    // MistralConfig's sliding_window defaults to 4096: a window shorter than the context changes
    // attention past it, which the runtime's causal attention does not do. Null, or a window as long
    // as the context, is plain causal attention (Mistral 7B v0.2 on).
    const positions = f.int('max_position_embeddings', 4096 * 32);
    const window = f.c.sliding_window === undefined ? 4096 : f.c.sliding_window;
    if (window !== null) {
      if (typeof window !== 'number' || !Number.isSafeInteger(window) || window <= 0)
        throw new Refused('sliding_window', `${JSON.stringify(window)} is not null or a positive whole number`);
      if (window < positions)
        throw new Refused(
          'sliding_window',
          `${window}${f.c.sliding_window === undefined ? " (transformers' default when absent)" : ''} is shorter than max_position_embeddings ${positions}: sliding-window attention is not the runtime's causal attention`,
        );
    }
    return decoder(f, 'llama', { kvHeadsDefault: 8, headDimDefault: undefined, positions: 4096 * 32 });
  },
  qwen3: (f) => {
    if (f.bool('use_sliding_window', false) && f.has('sliding_window'))
      throw new Refused(
        'use_sliding_window',
        `true with sliding_window ${JSON.stringify(f.c.sliding_window)}: sliding-window attention is not the runtime's causal attention`,
      );
    return decoder(f, 'qwen3', { kvHeadsDefault: 32, headDimDefault: 128, positions: 32768 });
  },
  gpt2: (f) => {
    f.only('activation_function', 'gelu_new', "the runtime's GPT-2 MLP is GELU's tanh form (gelu_new)");
    refuseExperts(f);
    const d = f.int('n_embd', 768);
    const inner = f.c.n_inner === undefined || f.c.n_inner === null ? 4 * d : f.int('n_inner');
    if (inner % d !== 0) throw new Refused('n_inner', `${inner} is not a whole multiple of n_embd ${d}`);
    return {
      architecture: 'gpt2',
      vocab_size: f.int('vocab_size', 50257),
      d_model: d,
      n_layers: f.int('n_layer', 12),
      n_heads: f.int('n_head', 12),
      max_seq_len: f.int('n_positions', 1024),
      mlp_ratio: inner / d,
      tie_embeddings: f.bool('tie_word_embeddings', true),
    };
  },
};

/** Llama 3 / SmolLM2 / Mistral / Qwen3: the keys of decoder-layout.md's family. */
function decoder(
  f: Fields,
  architecture: 'llama' | 'qwen3',
  defaults: { kvHeadsDefault: number | undefined; headDimDefault: number | undefined; positions: number },
): HfRunModel {
  refuseExperts(f);
  f.only('hidden_act', 'silu', "the runtime's MLP is SwiGLU (silu)");
  f.only('attention_dropout', 0, 'the runtime has no attention dropout');
  if (Array.isArray(f.c.layer_types)) {
    const other = f.c.layer_types.findIndex((t) => t !== 'full_attention');
    if (other >= 0)
      throw new Refused(
        'layer_types',
        `layer ${other} is ${JSON.stringify(f.c.layer_types[other])}: every layer must be full_attention`,
      );
  }
  const hidden = f.int('hidden_size');
  const heads = f.int('num_attention_heads');
  const kvHeads = f.int('num_key_value_heads', defaults.kvHeadsDefault ?? heads);
  if (heads % kvHeads !== 0)
    throw new Refused('num_key_value_heads', `${kvHeads} does not divide num_attention_heads ${heads}`);
  const headDim = f.int('head_dim', defaults.headDimDefault ?? Math.floor(hidden / heads));
  const rope = ropeOf(f);
  const attentionBias = f.bool('attention_bias', false);
  const mlpBias = f.bool('mlp_bias', false);
  return {
    architecture,
    vocab_size: f.int('vocab_size'),
    d_model: hidden,
    n_layers: f.int('num_hidden_layers'),
    n_heads: heads,
    n_kv_heads: kvHeads,
    head_dim: headDim,
    intermediate_size: f.int('intermediate_size'),
    max_seq_len: f.int('max_position_embeddings', defaults.positions),
    tie_embeddings: f.bool('tie_word_embeddings', false),
    rms_norm_eps: f.positive('rms_norm_eps', 1e-6),
    rope_theta: rope.theta,
    ...(rope.scaling ? { rope_scaling: rope.scaling } : {}),
    ...(attentionBias ? { attention_bias: true } : {}),
    ...(mlpBias ? { mlp_bias: true } : {}),
  };
}

function refuseExperts(f: Fields): void {
  for (const key of ['num_experts', 'num_local_experts', 'n_routed_experts']) {
    const v = f.c[key];
    if (typeof v === 'number' && v > 0)
      throw new Refused(key, `${v}: a mixture of experts; the runtime trains dense models`);
  }
}

/** rope_theta and the llama3 scaling, from 4.x's rope_theta + rope_scaling or 5.x's rope_parameters. */
function ropeOf(f: Fields): { theta: number; scaling?: Record<string, number | string> } {
  const key = f.has('rope_parameters') ? 'rope_parameters' : 'rope_scaling';
  const params = f.c[key];
  if (params !== undefined && params !== null && (typeof params !== 'object' || Array.isArray(params)))
    throw new Refused(key, `${JSON.stringify(params)} is not an object`);
  const p = (params ?? {}) as Record<string, unknown>;
  if (key === 'rope_parameters' && Object.values(p).some((v) => v !== null && typeof v === 'object'))
    throw new Refused(key, 'rope parameters per layer type: every layer must share one rotary embedding');
  const thetaIn = p.rope_theta !== undefined ? new Fields(p) : f;
  const theta = thetaIn.positive('rope_theta', 10000);
  const type = p.rope_type ?? p.type ?? 'default';
  const typeKey = `${key}.${p.rope_type !== undefined ? 'rope_type' : 'type'}`;
  if (type === 'default') {
    if (p.partial_rotary_factor !== undefined && p.partial_rotary_factor !== 1)
      throw new Refused(
        `${key}.partial_rotary_factor`,
        `${JSON.stringify(p.partial_rotary_factor)}: rotary embeddings on every dimension only`,
      );
    return { theta };
  }
  if (type !== 'llama3')
    throw new Refused(
      typeKey,
      `${JSON.stringify(type)}: the runtime applies rotary embeddings as "default" or Llama 3's "llama3" scaling`,
    );
  const s = new Fields(p);
  const scaled = (name: string) => {
    try {
      return name === 'original_max_position_embeddings' ? s.int(name) : s.positive(name, NaN);
    } catch (e) {
      throw e instanceof Refused ? new Refused(`${key}.${e.key}`, e.message.slice(e.key.length + 2)) : e;
    }
  };
  const scaling = {
    rope_type: 'llama3',
    factor: scaled('factor'),
    low_freq_factor: scaled('low_freq_factor'),
    high_freq_factor: scaled('high_freq_factor'),
    original_max_position_embeddings: scaled('original_max_position_embeddings'),
  };
  for (const [name, v] of Object.entries(scaling))
    if (typeof v === 'number' && Number.isNaN(v))
      throw new Refused(`${key}.${name}`, 'missing (llama3 scaling needs it)');
  if (scaling.high_freq_factor <= scaling.low_freq_factor)
    throw new Refused(
      `${key}.high_freq_factor`,
      `${scaling.high_freq_factor} must be above low_freq_factor ${scaling.low_freq_factor}`,
    );
  return { theta, scaling };
}

/** A regular file of at most `limit` bytes, read through one descriptor (never a FIFO, a device, or a file swapped in between a stat and the read). */
export function readBoundedRegularFile(file: string, limit: number): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > limit) throw new Error(`${st.size} bytes: larger than the ${limit} a config.json can be`);
    const buf = Buffer.alloc(st.size);
    let read = 0;
    while (read < st.size) {
      const n = readSync(fd, buf, read, st.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buf.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function tryStatDir(p: string): boolean {
  try {
    const fd = openSync(p, constants.O_RDONLY | constants.O_DIRECTORY);
    closeSync(fd);
    return true;
  } catch {
    return false;
  }
}
