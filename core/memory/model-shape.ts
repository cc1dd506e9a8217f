// The shape of a decoder-only transformer and its exact parameter tensors. Covers our own GPT block
// (GPT-2 style: LayerNorm with bias, GELU MLP, learned positions, biased linears) and the families
// Hugging Face configs describe (./hf-config.ts): Llama/Mistral (RMSNorm, SwiGLU, rotary, GQA),
// Qwen2 (q/k/v biases), Gemma (GeGLU, head_dim ≠ d_model / heads), GPT-NeoX and Phi (parallel
// attention and MLP, partial rotary, biased LayerNorm), Mixtral (experts with a router).
// The tensor list is the one truth: counts, FSDP units and the memory replay all read it.
import type { ModelConfig } from '../generated/run-config';

export interface ModelShape {
  /** Shown in reports: a preset's or Hugging Face model's name, or "custom". */
  name: string;
  vocabSize: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  /** Key/value heads; fewer than nHeads is grouped-query attention. */
  nKvHeads: number;
  /** Width of one attention head; dModel / nHeads when absent (Gemma sets it apart). */
  headDim?: number;
  /** Width of the MLP's hidden layer (4 × dModel for GPT-2); per expert for MoE. */
  ffnHidden: number;
  /** gelu: two matrices; swiglu: gated, three matrices (SwiGLU, and GeGLU as Gemma uses it). */
  mlp: 'gelu' | 'swiglu';
  norm: 'layernorm' | 'rmsnorm';
  /** Every linear layer carries a bias (GPT-2, GPT-NeoX, Phi). */
  bias: boolean;
  /** Only the q, k and v projections carry biases (Qwen2). */
  qkvBias?: boolean;
  /** The attention's output projection carries a bias (Llama's attention_bias: q, k, v and o). */
  projBias?: boolean;
  /** The MLP's linears carry biases (Llama's mlp_bias). */
  mlpBias?: boolean;
  /** A per-head RMSNorm of q and of k, headDim wide each (Qwen3). */
  qkNorm?: boolean;
  /** The LM head carries a bias (Phi). */
  headBias?: boolean;
  /** Norms per block: 2 (before attention and before the MLP) or 1 (Phi's shared one). */
  normsPerBlock?: 1 | 2;
  /** Rows of the learned position table; 0 for rotary positions. */
  positionEmbeddings: number;
  /** The LM head shares the token embedding's weight. */
  tieEmbeddings: boolean;
  /** Mixture of experts: `count` MLPs per block, `perToken` of them run for each token, and a router. */
  experts?: { count: number; perToken: number };
}

/** Elements of each parameter tensor, in the module order PyTorch registers them. */
export interface ParameterTensors {
  /** One block's tensors (norms, attention, MLP or experts and router). */
  block: number[];
  /** The matrices of one block's linear layers (what autocast casts and saves), with their biases. */
  blockLinears: Array<{ weight: number; bias: number }>;
  /** Token embedding, learned positions (if any). */
  embedding: number[];
  /** Final norm. */
  finalNorm: number[];
  /** Untied LM head weight (and bias); empty when tied. */
  head: number[];
}

export function parameterTensors(m: ModelShape): ParameterTensors {
  const d = m.dModel;
  const qDim = m.nHeads * headDimOf(m);
  const kvDim = m.nKvHeads * headDimOf(m);
  const norm = m.norm === 'layernorm' ? [d, d] : [d];
  const linear = (out: number, inp: number, bias = m.bias) => ({ weight: out * inp, bias: bias ? out : 0 });
  const qkvBias = m.bias || !!m.qkvBias;
  const attention = [linear(qDim + 2 * kvDim, d, qkvBias), linear(d, qDim, m.bias || !!m.projBias)];
  const f = m.ffnHidden;
  const mb = m.bias || !!m.mlpBias;
  const oneMlp =
    m.mlp === 'gelu' ? [linear(f, d, mb), linear(d, f, mb)] : [linear(f, d, mb), linear(f, d, mb), linear(d, f, mb)];
  const experts = m.experts ? m.experts.count : 1;
  const mlp: Array<{ weight: number; bias: number }> = [];
  for (let e = 0; e < experts; e++) mlp.push(...oneMlp);
  if (m.experts) mlp.push(linear(m.experts.count, d, false)); // the router
  const blockLinears = [...attention, ...mlp];
  const norms = [
    ...((m.normsPerBlock ?? 2) === 2 ? [...norm, ...norm] : norm),
    ...(m.qkNorm ? [headDimOf(m), headDimOf(m)] : []),
  ];
  const block = [...norms, ...blockLinears.flatMap((l) => (l.bias ? [l.weight, l.bias] : [l.weight]))];
  const embedding = [m.vocabSize * d, ...(m.positionEmbeddings > 0 ? [m.positionEmbeddings * d] : [])];
  const head = m.tieEmbeddings ? [] : [m.vocabSize * d, ...(m.headBias ? [m.vocabSize] : [])];
  return { block, blockLinears, embedding, finalNorm: norm, head };
}

export function headDimOf(m: ModelShape): number {
  return m.headDim ?? m.dModel / m.nHeads;
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
  const t = parameterTensors(m);
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const embedding = sum(t.embedding);
  const block = sum(t.block);
  const finalNorm = sum(t.finalNorm);
  const head = sum(t.head);
  const root = embedding + finalNorm + head;
  return { embedding, block, finalNorm, head, root, total: root + m.nLayers * block };
}

/** Parameters one token passes through (MoE: only its experts), for FLOP counts. */
export function activeParameters(m: ModelShape): number {
  if (!m.experts) return parameterCounts(m).total;
  const c = parameterCounts(m);
  const f = m.ffnHidden;
  const oneExpert =
    (m.mlp === 'gelu' ? 2 : 3) * m.dModel * f + (m.bias ? (m.mlp === 'gelu' ? f + m.dModel : 2 * f + m.dModel) : 0);
  return c.total - m.nLayers * (m.experts.count - m.experts.perToken) * oneExpert;
}

/**
 * The model of our own runtime, from a run config's `model:` section: GPT-2's block, or the Llama
 * family's (llama, qwen3) with the tensors native/src/model/param_layout.cc lays out (their total
 * is held to ParamLayout's in test/native/param-count.test.ts).
 */
export function runConfigShape(model: ModelConfig, name = 'custom'): ModelShape {
  const common = {
    name,
    vocabSize: model.vocab_size,
    dModel: model.d_model,
    nLayers: model.n_layers,
    nHeads: model.n_heads,
    tieEmbeddings: model.tie_embeddings ?? true,
  };
  if ((model.architecture ?? 'gpt2') === 'gpt2')
    return {
      ...common,
      nKvHeads: model.n_heads,
      ffnHidden: (model.mlp_ratio ?? 4) * model.d_model,
      mlp: 'gelu',
      norm: 'layernorm',
      bias: true,
      positionEmbeddings: model.max_seq_len,
    };
  return {
    ...common,
    nKvHeads: model.n_kv_heads ?? model.n_heads,
    ...(model.head_dim !== undefined ? { headDim: model.head_dim } : {}),
    ffnHidden: model.intermediate_size ?? 0,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    ...(model.attention_bias ? { qkvBias: true, projBias: true } : {}),
    ...(model.mlp_bias ? { mlpBias: true } : {}),
    ...(model.architecture === 'qwen3' ? { qkNorm: true } : {}),
    positionEmbeddings: 0,
  };
}

/** Why a shape cannot be estimated, or undefined when it can. */
export function shapeProblem(m: ModelShape): string | undefined {
  for (const key of ['vocabSize', 'dModel', 'nLayers', 'nHeads', 'nKvHeads', 'ffnHidden'] as const) {
    if (!Number.isSafeInteger(m[key]) || m[key] < 1) return `${key} must be a positive integer, not ${m[key]}`;
  }
  if (m.headDim !== undefined && (!Number.isSafeInteger(m.headDim) || m.headDim < 1))
    return `headDim must be a positive integer, not ${m.headDim}`;
  if (m.headDim === undefined && m.dModel % m.nHeads !== 0)
    return `d_model ${m.dModel} is not divisible by n_heads ${m.nHeads}`;
  if (m.nHeads % m.nKvHeads !== 0) return `n_heads ${m.nHeads} is not divisible by n_kv_heads ${m.nKvHeads}`;
  if (m.experts && (!(m.experts.count >= 1) || !(m.experts.perToken >= 1) || m.experts.perToken > m.experts.count))
    return `experts: ${m.experts.perToken} per token of ${m.experts.count} is not possible`;
  return undefined;
}
