// Model presets: the GPT-2 sizes (OpenAI's released configs) and Llama-style sizes (Meta's
// published configs), for configs that do not describe their model (DeepSpeed, accelerate).
import type { ModelShape } from './model-shape';

export interface ModelPreset {
  id: string;
  shape: ModelShape;
  /** The sequence length the model was trained with, used when a config does not give one. */
  seqLen: number;
  /** The Hugging Face ids of this model (`meta-llama/Llama-2-7b-hf`), matched offline when it is not in the cache. */
  hfIds: readonly string[];
}

function gpt2(id: string, name: string, hfIds: string[], dModel: number, nLayers: number, nHeads: number): ModelPreset {
  return {
    id,
    hfIds,
    seqLen: 1024,
    shape: {
      name,
      vocabSize: 50257,
      dModel,
      nLayers,
      nHeads,
      nKvHeads: nHeads,
      ffnHidden: 4 * dModel,
      mlp: 'gelu',
      norm: 'layernorm',
      bias: true,
      positionEmbeddings: 1024,
      tieEmbeddings: true,
    },
  };
}

function llama(
  id: string,
  name: string,
  hfIds: string[],
  o: {
    vocab: number;
    d: number;
    layers: number;
    heads: number;
    kvHeads: number;
    ffn: number;
    tied: boolean;
    seqLen: number;
  },
): ModelPreset {
  return {
    id,
    hfIds,
    seqLen: o.seqLen,
    shape: {
      name,
      vocabSize: o.vocab,
      dModel: o.d,
      nLayers: o.layers,
      nHeads: o.heads,
      nKvHeads: o.kvHeads,
      ffnHidden: o.ffn,
      mlp: 'swiglu',
      norm: 'rmsnorm',
      bias: false,
      positionEmbeddings: 0,
      tieEmbeddings: o.tied,
    },
  };
}

export const MODEL_PRESETS: readonly ModelPreset[] = [
  gpt2('gpt2-124m', 'GPT-2 124M', ['openai-community/gpt2', 'gpt2'], 768, 12, 12),
  gpt2('gpt2-355m', 'GPT-2 355M', ['openai-community/gpt2-medium', 'gpt2-medium'], 1024, 24, 16),
  gpt2('gpt2-774m', 'GPT-2 774M', ['openai-community/gpt2-large', 'gpt2-large'], 1280, 36, 20),
  gpt2('gpt2-1.5b', 'GPT-2 1.5B', ['openai-community/gpt2-xl', 'gpt2-xl'], 1600, 48, 25),
  llama('llama-3.2-1b', 'Llama 3.2 1B', ['meta-llama/Llama-3.2-1B', 'meta-llama/Llama-3.2-1B-Instruct'], {
    vocab: 128256,
    d: 2048,
    layers: 16,
    heads: 32,
    kvHeads: 8,
    ffn: 8192,
    tied: true,
    seqLen: 4096,
  }),
  llama('llama-3.2-3b', 'Llama 3.2 3B', ['meta-llama/Llama-3.2-3B', 'meta-llama/Llama-3.2-3B-Instruct'], {
    vocab: 128256,
    d: 3072,
    layers: 28,
    heads: 24,
    kvHeads: 8,
    ffn: 8192,
    tied: true,
    seqLen: 4096,
  }),
  llama(
    'llama-2-7b',
    'Llama 2 7B',
    ['meta-llama/Llama-2-7b-hf', 'meta-llama/Llama-2-7b-chat-hf', 'meta-llama/Llama-2-7b'],
    {
      vocab: 32000,
      d: 4096,
      layers: 32,
      heads: 32,
      kvHeads: 32,
      ffn: 11008,
      tied: false,
      seqLen: 4096,
    },
  ),
  llama('llama-3-8b', 'Llama 3 8B', ['meta-llama/Meta-Llama-3-8B', 'meta-llama/Meta-Llama-3-8B-Instruct'], {
    vocab: 128256,
    d: 4096,
    layers: 32,
    heads: 32,
    kvHeads: 8,
    ffn: 14336,
    tied: false,
    seqLen: 8192,
  }),
  llama(
    'llama-2-13b',
    'Llama 2 13B',
    ['meta-llama/Llama-2-13b-hf', 'meta-llama/Llama-2-13b-chat-hf', 'meta-llama/Llama-2-13b'],
    {
      vocab: 32000,
      d: 5120,
      layers: 40,
      heads: 40,
      kvHeads: 40,
      ffn: 13824,
      tied: false,
      seqLen: 4096,
    },
  ),
  llama('llama-3-70b', 'Llama 3 70B', ['meta-llama/Meta-Llama-3-70B', 'meta-llama/Meta-Llama-3-70B-Instruct'], {
    vocab: 128256,
    d: 8192,
    layers: 80,
    heads: 64,
    kvHeads: 8,
    ffn: 28672,
    tied: false,
    seqLen: 8192,
  }),
];

/**
 * Finds a preset by id, ignoring case and punctuation ("GPT2-124M", "llama_2_7b"), or by the
 * Hugging Face id of its model ("meta-llama/Llama-2-7b-hf"), offline.
 */
export function findModelPreset(name: string): ModelPreset | undefined {
  const key = normalise(name);
  const hf = name.trim().toLowerCase();
  return MODEL_PRESETS.find(
    (p) => normalise(p.id) === key || normalise(p.shape.name) === key || p.hfIds.some((id) => id.toLowerCase() === hf),
  );
}

function normalise(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9.]/g, '');
}
