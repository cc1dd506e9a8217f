// A Hugging Face `config.json` as a model shape, for the families whose parameter tensors
// model-shape.ts describes. Field names and defaults as transformers' configuration classes read them
// (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, GemmaConfig, GPT2Config, GPTNeoXConfig,
// PhiConfig and Phi-2's earlier "phi-msft" format). Pure: reading the file is ./inputs/hf-model.ts's job.
import { shapeProblem, type ModelShape } from './model-shape';

export interface HfModel {
  shape: ModelShape;
  /** The sequence length the model was trained for (max_position_embeddings, capped at 8192 for estimates). */
  seqLen: number;
  /** The family as config.json names it (model_type). */
  family: string;
}

type Json = Record<string, unknown>;

/** Families read, by model_type. */
export const HF_FAMILIES = [
  'llama',
  'mistral',
  'mixtral',
  'qwen2',
  'gemma',
  'gpt2',
  'gpt_neox',
  'phi',
  'phi-msft',
] as const;

export function shapeFromHfConfig(config: unknown, name: string): HfModel | { error: string } {
  if (!config || typeof config !== 'object' || Array.isArray(config))
    return { error: 'config.json is not a JSON object' };
  const c = config as Json;
  const type = typeof c.model_type === 'string' ? c.model_type : familyOfArchitecture(c.architectures);
  if (!type) return { error: 'config.json names no model_type' };
  const read = READERS[type];
  if (!read) return { error: `model_type "${type}" is not one the estimator reads (${HF_FAMILIES.join(', ')})` };
  const f = new Fields(c);
  const shape = read(f, name);
  if (f.missing.length) return { error: `config.json (${type}) lacks ${f.missing.join(', ')}` };
  const problem = shapeProblem(shape);
  if (problem) return { error: `config.json (${type}): ${problem}` };
  const positions = f.optional('max_position_embeddings', f.optional('n_positions', 2048));
  return { shape, seqLen: Math.min(positions, 8192), family: type };
}

function familyOfArchitecture(architectures: unknown): string | undefined {
  if (!Array.isArray(architectures) || typeof architectures[0] !== 'string') return undefined;
  const a = architectures[0];
  const known: Array<[RegExp, string]> = [
    [/^Llama/, 'llama'],
    [/^Mistral/, 'mistral'],
    [/^Mixtral/, 'mixtral'],
    [/^Qwen2For/, 'qwen2'],
    [/^Gemma/, 'gemma'],
    [/^GPT2/, 'gpt2'],
    [/^GPTNeoX/, 'gpt_neox'],
    [/^Phi/, 'phi'],
  ];
  return known.find(([re]) => re.test(a))?.[1];
}

class Fields {
  readonly missing: string[] = [];

  constructor(private readonly c: Json) {}

  /** A positive integer field, the first of `keys` present. */
  int(...keys: string[]): number {
    for (const k of keys) {
      const v = this.c[k];
      if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
    }
    this.missing.push(keys[0]);
    return 1;
  }

  optional(key: string, fallback: number): number {
    const v = this.c[key];
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.c[key];
    return typeof v === 'boolean' ? v : fallback;
  }
}

/** Llama-style decoders: RMSNorm, gated MLP, rotary positions, optional grouped-query attention. */
function llamaStyle(f: Fields, name: string, o: { tied: boolean; qkvBias?: boolean; experts?: boolean }): ModelShape {
  const heads = f.int('num_attention_heads');
  const hidden = f.int('hidden_size');
  const headDim = f.optional('head_dim', hidden / heads);
  return {
    name,
    vocabSize: f.int('vocab_size'),
    dModel: hidden,
    nLayers: f.int('num_hidden_layers'),
    nHeads: heads,
    nKvHeads: f.optional('num_key_value_heads', heads),
    ...(headDim !== hidden / heads ? { headDim } : {}),
    ffnHidden: f.int('intermediate_size'),
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: f.bool('attention_bias', false) && f.bool('mlp_bias', false),
    ...(o.qkvBias || (f.bool('attention_bias', false) && !f.bool('mlp_bias', false)) ? { qkvBias: true } : {}),
    positionEmbeddings: 0,
    tieEmbeddings: f.bool('tie_word_embeddings', o.tied),
    ...(o.experts ? { experts: { count: f.int('num_local_experts'), perToken: f.int('num_experts_per_tok') } } : {}),
  };
}

const READERS: Record<string, (f: Fields, name: string) => ModelShape> = {
  llama: (f, name) => llamaStyle(f, name, { tied: false }),
  mistral: (f, name) => llamaStyle(f, name, { tied: false }),
  mixtral: (f, name) => llamaStyle(f, name, { tied: false, experts: true }),
  // Qwen2: biases on q, k and v only.
  qwen2: (f, name) => llamaStyle(f, name, { tied: false, qkvBias: true }),
  // Gemma: a GeGLU MLP (three matrices, as SwiGLU), head_dim apart from hidden/heads, tied head.
  gemma: (f, name) => llamaStyle(f, name, { tied: true }),
  gpt2: (f, name) => {
    const d = f.int('n_embd');
    return {
      name,
      vocabSize: f.int('vocab_size'),
      dModel: d,
      nLayers: f.int('n_layer'),
      nHeads: f.int('n_head'),
      nKvHeads: f.int('n_head'),
      ffnHidden: f.optional('n_inner', 4 * d),
      mlp: 'gelu',
      norm: 'layernorm',
      bias: true,
      positionEmbeddings: f.int('n_positions', 'n_ctx'),
      tieEmbeddings: f.bool('tie_word_embeddings', true),
    };
  },
  // GPT-NeoX (Pythia, RedPajama-INCITE): biased LayerNorms and linears, fused q/k/v, partial rotary, untied embed_out.
  gpt_neox: (f, name) => ({
    name,
    vocabSize: f.int('vocab_size'),
    dModel: f.int('hidden_size'),
    nLayers: f.int('num_hidden_layers'),
    nHeads: f.int('num_attention_heads'),
    nKvHeads: f.int('num_attention_heads'),
    ffnHidden: f.int('intermediate_size'),
    mlp: 'gelu',
    norm: 'layernorm',
    bias: true,
    positionEmbeddings: 0,
    tieEmbeddings: f.bool('tie_word_embeddings', false),
  }),
  // Phi-1/1.5/2: one LayerNorm per block shared by attention and MLP (run in parallel), biased
  // linears, a biased LM head.
  phi: (f, name) => phiShape(f, name, 'hidden_size', 'num_hidden_layers', 'num_attention_heads', 'intermediate_size'),
  'phi-msft': (f, name) => phiShape(f, name, 'n_embd', 'n_layer', 'n_head', 'n_inner'),
};

function phiShape(f: Fields, name: string, hidden: string, layers: string, heads: string, inner: string): ModelShape {
  const d = f.int(hidden);
  const h = f.int(heads);
  return {
    name,
    vocabSize: f.int('vocab_size'),
    dModel: d,
    nLayers: f.int(layers),
    nHeads: h,
    nKvHeads: f.optional('num_key_value_heads', h),
    ffnHidden: f.optional(inner, 4 * d),
    mlp: 'gelu',
    norm: 'layernorm',
    bias: true,
    headBias: true,
    normsPerBlock: 1,
    positionEmbeddings: 0,
    tieEmbeddings: f.bool('tie_word_embeddings', false),
  };
}
