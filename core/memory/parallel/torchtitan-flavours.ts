// torchtitan's model flavours (model.name + model.flavor in a job config) as N-D models, from
// torchtitan 0.2.2's own definitions: torchtitan/models/llama3/__init__.py (llama3_args,
// TransformerModelArgs: vocab 128256, hidden = multiple_of ⌈ffn_dim_multiplier · 2/3 · 4·dim⌉) and
// torchtitan/models/deepseek_v3/__init__.py (deepseekv3_args, DeepSeekV3ModelArgs, MoEArgs).
import type { NdModel } from './nd-model';

/** Llama 3's SwiGLU width: torchtitan's FeedForward rounds 2/3 · 4·dim · multiplier up to `multipleOf`. */
export function llama3FfnHidden(dim: number, multiplier: number | undefined, multipleOf: number): number {
  let hidden = Math.floor((2 * 4 * dim) / 3);
  if (multiplier !== undefined) hidden = Math.floor(multiplier * hidden);
  return multipleOf * Math.ceil(hidden / multipleOf);
}

function llama3(
  name: string,
  o: {
    dim: number;
    layers: number;
    heads: number;
    kvHeads?: number;
    multiplier?: number;
    multipleOf?: number;
    vocab?: number;
  },
): NdModel {
  return {
    name,
    vocabSize: o.vocab ?? 128256,
    dModel: o.dim,
    nLayers: o.layers,
    nHeads: o.heads,
    nKvHeads: o.kvHeads ?? o.heads,
    headDim: o.dim / o.heads,
    ffnHidden: llama3FfnHidden(o.dim, o.multiplier, o.multipleOf ?? 256),
    mlp: 'swiglu',
    tieEmbeddings: false,
  };
}

function deepseek(
  name: string,
  o: {
    vocab: number;
    dim: number;
    inter: number;
    moeInter: number;
    layers: number;
    dense: number;
    heads: number;
    experts: number;
    shared: number;
    topK: number;
    qLoraRank: number;
  },
): NdModel {
  return {
    name,
    vocabSize: o.vocab,
    dModel: o.dim,
    nLayers: o.layers,
    nHeads: o.heads,
    nKvHeads: o.heads,
    headDim: 128,
    mla: { qLoraRank: o.qLoraRank, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128 },
    ffnHidden: o.inter,
    mlp: 'swiglu',
    moe: { experts: o.experts, topK: o.topK, expertFfn: o.moeInter, shared: o.shared, denseLayers: o.dense },
    tieEmbeddings: false,
  };
}

/** By `model.name`, then `model.flavor`, as torchtitan's train specs register them. */
export const TORCHTITAN_FLAVOURS: Record<string, Record<string, NdModel>> = {
  llama3: {
    debugmodel: llama3('Llama 3 debugmodel', { dim: 256, layers: 6, heads: 16, vocab: 2048 }),
    '8B': llama3('Llama 3 8B', { dim: 4096, layers: 32, heads: 32, kvHeads: 8, multiplier: 1.3, multipleOf: 1024 }),
    '70B': llama3('Llama 3 70B', { dim: 8192, layers: 80, heads: 64, kvHeads: 8, multiplier: 1.3, multipleOf: 4096 }),
    '405B': llama3('Llama 3 405B', {
      dim: 16384,
      layers: 126,
      heads: 128,
      kvHeads: 8,
      multiplier: 1.2,
      multipleOf: 4096,
    }),
  },
  deepseek_v3: {
    debugmodel: deepseek('DeepSeek-V3 debugmodel', {
      vocab: 2048,
      dim: 256,
      inter: 1024,
      moeInter: 256,
      layers: 6,
      dense: 1,
      heads: 16,
      experts: 8,
      shared: 2,
      topK: 3,
      qLoraRank: 0,
    }),
    '16B': deepseek('DeepSeek-V3 16B', {
      vocab: 102400,
      dim: 2048,
      inter: 10944,
      moeInter: 1408,
      layers: 27,
      dense: 1,
      heads: 16,
      experts: 64,
      shared: 2,
      topK: 6,
      qLoraRank: 0,
    }),
    '671B': deepseek('DeepSeek-V3 671B', {
      vocab: 129280,
      dim: 7168,
      inter: 18432,
      moeInter: 2048,
      layers: 61,
      dense: 3,
      heads: 128,
      experts: 256,
      shared: 1,
      topK: 8,
      qLoraRank: 1536,
    }),
  },
};

export function torchtitanFlavour(name: string, flavor: string): NdModel | undefined {
  return TORCHTITAN_FLAVOURS[name]?.[flavor];
}

export function knownFlavours(): string[] {
  return Object.entries(TORCHTITAN_FLAVOURS).flatMap(([n, fs]) => Object.keys(fs).map((f) => `${n}/${f}`));
}
