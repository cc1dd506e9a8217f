// The shapes bench/memory-lora/measure.py builds (their config.json), as the estimator's ModelShape: shared by
// compare.ts and compare-zero.ts.
import type { ModelShape } from '../../core/memory/model-shape';

/** The shapes measure.py builds (their config.json), as the estimator's ModelShape. */
export const SHAPES: Record<string, Omit<ModelShape, 'nLayers'>> = {
  'smollm2-360m': {
    name: 'SmolLM2-360M',
    vocabSize: 49152,
    dModel: 960,
    nHeads: 15,
    nKvHeads: 5,
    ffnHidden: 2560,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: true,
  },
  'qwen3-0.6b': {
    name: 'Qwen3-0.6B',
    vocabSize: 151936,
    dModel: 1024,
    nHeads: 16,
    nKvHeads: 8,
    headDim: 128,
    ffnHidden: 3072,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: true,
  },
  'llama-3.2-1b': {
    name: 'Llama-3.2-1B',
    vocabSize: 128256,
    dModel: 2048,
    nHeads: 32,
    nKvHeads: 8,
    ffnHidden: 8192,
    mlp: 'swiglu',
    norm: 'rmsnorm',
    bias: false,
    positionEmbeddings: 0,
    tieEmbeddings: true,
  },
};
