// The model as N-D parallelism sees it: per layer, which parameters tensor parallel shards, which
// experts expert parallel spreads, and the widths activations have. Covers Llama-style decoders
// (GQA attention, SwiGLU) and DeepSeek-style MoE (multi-head latent attention, a few dense layers
// first, routed plus shared experts), as torchtitan's llama3 and deepseek_v3 models build them.
import { headDimOf, parameterCounts, type ModelShape } from '../model-shape';

export interface MlaAttention {
  /** 0: the query is projected directly (DeepSeek-V3 16B); else through a low-rank step. */
  qLoraRank: number;
  kvLoraRank: number;
  qkNopeHeadDim: number;
  qkRopeHeadDim: number;
  vHeadDim: number;
}

export interface NdModel {
  name: string;
  vocabSize: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** Multi-head latent attention (DeepSeek); absent: grouped-query attention. */
  mla?: MlaAttention;
  /** Hidden width of a dense layer's SwiGLU MLP. */
  ffnHidden: number;
  /** gelu: two matrices (GPT-2 style); swiglu: three. */
  mlp: 'gelu' | 'swiglu';
  moe?: {
    experts: number;
    topK: number;
    /** Hidden width of one routed expert. */
    expertFfn: number;
    /** Shared experts, run on every token (one MLP of width shared × expertFfn). */
    shared: number;
    /** The first `denseLayers` layers have a dense MLP instead. */
    denseLayers: number;
  };
  tieEmbeddings: boolean;
  /** Parameters beyond the formula's (biases, learned positions) spread over the layers; 0 for Llama and DeepSeek. */
  extraPerLayer?: number;
}

/** Elements of one layer, split by how parallelism treats them. */
export interface LayerParameters {
  /** Attention projections and dense or shared-expert MLP matrices: sharded by tensor parallel. */
  tpSharded: number;
  /** Norm weights and the router: replicated across tensor parallel ranks. */
  replicated: number;
  /** Routed experts: spread over expert parallel ranks. */
  experts: number;
}

export function attentionParameters(m: NdModel): number {
  const h = m.dModel;
  if (m.mla) {
    const a = m.mla;
    const qHead = a.qkNopeHeadDim + a.qkRopeHeadDim;
    const q = a.qLoraRank > 0 ? h * a.qLoraRank + a.qLoraRank + a.qLoraRank * m.nHeads * qHead : h * m.nHeads * qHead;
    return (
      q +
      h * (a.kvLoraRank + a.qkRopeHeadDim) +
      a.kvLoraRank +
      a.kvLoraRank * m.nHeads * (a.qkNopeHeadDim + a.vHeadDim) +
      m.nHeads * a.vHeadDim * h
    );
  }
  const q = m.nHeads * m.headDim;
  const kv = m.nKvHeads * m.headDim;
  return h * q + 2 * h * kv + q * h;
}

const mlpMatrices = (m: NdModel) => (m.mlp === 'gelu' ? 2 : 3);

export function isMoeLayer(m: NdModel, layer: number): boolean {
  return !!m.moe && layer >= m.moe.denseLayers;
}

export function layerParameters(m: NdModel, layer: number): LayerParameters {
  const h = m.dModel;
  const attention = attentionParameters(m);
  const norms = 2 * h;
  const extra = m.extraPerLayer ?? 0;
  if (!isMoeLayer(m, layer))
    return { tpSharded: attention + mlpMatrices(m) * h * m.ffnHidden + extra, replicated: norms, experts: 0 };
  const e = m.moe!;
  return {
    tpSharded: attention + 3 * h * e.expertFfn * e.shared + extra,
    replicated: norms + h * e.experts,
    experts: 3 * h * e.expertFfn * e.experts,
  };
}

export function embeddingParameters(m: NdModel): number {
  return m.vocabSize * m.dModel;
}

/** Final norm and the LM head (none when tied and on the same rank as the embedding). */
export function outputParameters(m: NdModel, tiedHere: boolean): number {
  return m.dModel + (m.tieEmbeddings && tiedHere ? 0 : m.vocabSize * m.dModel);
}

export function totalParameters(m: NdModel): number {
  let total = embeddingParameters(m) + outputParameters(m, true);
  for (let l = 0; l < m.nLayers; l++) {
    const p = layerParameters(m, l);
    total += p.tpSharded + p.replicated + p.experts;
  }
  return total;
}

/** Parameters one token passes through (its top-k experts only). */
export function activeParameters(m: NdModel): number {
  if (!m.moe) return totalParameters(m);
  const moeLayers = m.nLayers - m.moe.denseLayers;
  return totalParameters(m) - moeLayers * 3 * m.dModel * m.moe.expertFfn * (m.moe.experts - m.moe.topK);
}

/** A model shape (our presets, Hugging Face config.json) as N-D parallelism sees it. */
export function ndModelFromShape(s: ModelShape): NdModel {
  const base: NdModel = {
    name: s.name,
    vocabSize: s.vocabSize,
    dModel: s.dModel,
    nLayers: s.nLayers,
    nHeads: s.nHeads,
    nKvHeads: s.nKvHeads,
    headDim: headDimOf(s),
    ffnHidden: s.ffnHidden,
    mlp: s.mlp,
    tieEmbeddings: s.tieEmbeddings,
    ...(s.experts
      ? {
          moe: {
            experts: s.experts.count,
            topK: s.experts.perToken,
            expertFfn: s.ffnHidden,
            shared: 0,
            denseLayers: 0,
          },
        }
      : {}),
  };
  // Biases, LayerNorm biases and learned positions: what the shape counts beyond this model's formula.
  const exact = parameterCounts(s).total;
  const formula = totalParameters(base);
  const extra = Math.max(0, Math.round((exact - formula) / s.nLayers));
  return extra > 0 ? { ...base, extraPerLayer: extra } : base;
}
