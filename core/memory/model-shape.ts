// The shape of a decoder-only transformer and its exact parameter counts. Covers our own GPT
// block (GPT-2 style: LayerNorm with bias, GELU MLP, learned positions, biased linears) and the
// Llama style (RMSNorm, SwiGLU, rotary positions, no biases, grouped-query attention), which are
// the two families people estimate for.

export interface ModelShape {
  /** Shown in reports: a preset's name, or "custom". */
  name: string;
  vocabSize: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  /** Key/value heads; fewer than nHeads is grouped-query attention. */
  nKvHeads: number;
  /** Width of the MLP's hidden layer (4 × dModel for GPT-2). */
  ffnHidden: number;
  mlp: 'gelu' | 'swiglu';
  norm: 'layernorm' | 'rmsnorm';
  /** Linear layers carry biases (GPT-2 yes, Llama no). */
  bias: boolean;
  /** Rows of the learned position table; 0 for rotary positions. */
  positionEmbeddings: number;
  /** The LM head shares the token embedding's weight. */
  tieEmbeddings: boolean;
}

/** Parameter counts by where they live; FSDP wraps each block as a unit, the rest is the root unit. */
export interface ParameterCounts {
  /** Token embedding plus learned positions. */
  embedding: number;
  /** One transformer block. */
  block: number;
  /** Final norm. */
  finalNorm: number;
  /** Untied LM head; 0 when tied. */
  head: number;
  /** Everything outside the blocks: embeddings, final norm, head. */
  root: number;
  total: number;
}

export function parameterCounts(m: ModelShape): ParameterCounts {
  const d = m.dModel;
  const headDim = d / m.nHeads;
  const kvDim = m.nKvHeads * headDim;
  const normParams = m.norm === 'layernorm' ? 2 * d : d;
  // Attention: q and output projections are d×d; k and v are d×kvDim each.
  const attention = 2 * d * d + 2 * d * kvDim + (m.bias ? 2 * d + 2 * kvDim : 0);
  const f = m.ffnHidden;
  const mlp = m.mlp === 'gelu' ? 2 * d * f + (m.bias ? f + d : 0) : 3 * d * f + (m.bias ? 2 * f + d : 0);
  const block = attention + mlp + 2 * normParams;
  const embedding = m.vocabSize * d + m.positionEmbeddings * d;
  const head = m.tieEmbeddings ? 0 : m.vocabSize * d;
  const root = embedding + normParams + head;
  return { embedding, block, finalNorm: normParams, head, root, total: root + m.nLayers * block };
}

/** The model of our own runtime, from a run config's `model:` section (GPT-2 style block). */
export function gptShape(model: { d_model: number; n_layers: number; n_heads: number; vocab_size: number; max_seq_len: number; mlp_ratio?: number; tie_embeddings?: boolean }, name = 'custom'): ModelShape {
  return {
    name,
    vocabSize: model.vocab_size,
    dModel: model.d_model,
    nLayers: model.n_layers,
    nHeads: model.n_heads,
    nKvHeads: model.n_heads,
    ffnHidden: (model.mlp_ratio ?? 4) * model.d_model,
    mlp: 'gelu',
    norm: 'layernorm',
    bias: true,
    positionEmbeddings: model.max_seq_len,
    tieEmbeddings: model.tie_embeddings ?? true,
  };
}

/** Why a shape cannot be estimated, or undefined when it can. */
export function shapeProblem(m: ModelShape): string | undefined {
  for (const key of ['vocabSize', 'dModel', 'nLayers', 'nHeads', 'nKvHeads', 'ffnHidden'] as const) {
    if (!Number.isInteger(m[key]) || m[key] < 1) return `${key} must be a positive integer, not ${m[key]}`;
  }
  if (m.dModel % m.nHeads !== 0) return `d_model ${m.dModel} is not divisible by n_heads ${m.nHeads}`;
  if (m.nHeads % m.nKvHeads !== 0) return `n_heads ${m.nHeads} is not divisible by n_kv_heads ${m.nKvHeads}`;
  return undefined;
}
