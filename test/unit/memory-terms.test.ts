// Every term of the memory model against values computed by hand for a tiny GPT (d_model 8,
// 2 blocks, 2 heads, vocabulary 16, 8 positions, MLP 32, tied head; micro-batch 2 × 8 tokens).
import assert from 'node:assert/strict';
import { estimateMemory } from '../../core/memory/estimate';
import type { MemoryEstimate, Phase } from '../../core/memory/memory-estimate';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import { findModelPreset } from '../../core/memory/model-presets';
import { parameterCounts, type ModelShape } from '../../core/memory/model-shape';

const TINY: ModelShape = {
  name: 'tiny',
  vocabSize: 16,
  dModel: 8,
  nLayers: 2,
  nHeads: 2,
  nKvHeads: 2,
  ffnHidden: 32,
  mlp: 'gelu',
  norm: 'layernorm',
  bias: true,
  positionEmbeddings: 8,
  tieEmbeddings: true,
};
// embedding 16·8 + 8·8 = 192; block: qkv 3·64+24, proj 64+8, fc 256+32, fc2 256+8, two LayerNorms 2·16 = 872; final LN 16.
const P = 192 + 2 * 872 + 16;

function tiny(over: Partial<MemoryInput> = {}): MemoryInput {
  // On 'cpu' the PyTorch model adds no CUDA context, cuBLAS workspace or fragmentation.
  return { ...defaultMemoryInput(TINY, 8), device: 'cpu', microBatch: 2, strategy: 'NO_SHARD', ...over };
}

function term(e: MemoryEstimate, id: string, phase: Phase): number {
  const t = e.terms.find((x) => x.id === id);
  assert.ok(t, `no term ${id}; terms: ${e.terms.map((x) => x.id).join(', ')}`);
  return t.bytes[phase];
}

describe('memory model: parameter counts', () => {
  it('counts the tiny GPT by hand', () => {
    assert.deepEqual(parameterCounts(TINY), {
      embedding: 192,
      block: 872,
      finalNorm: 16,
      head: 0,
      root: 208,
      total: P,
    });
  });

  it('counts the published sizes: GPT-2 124M, Llama 2 7B, Llama 3 8B, Llama 3 70B', () => {
    assert.equal(parameterCounts(findModelPreset('gpt2-124m')!.shape).total, 124_439_808);
    assert.equal(parameterCounts(findModelPreset('llama-2-7b')!.shape).total, 6_738_415_616);
    assert.equal(parameterCounts(findModelPreset('llama-3-8b')!.shape).total, 8_030_261_248);
    assert.equal(parameterCounts(findModelPreset('llama-3-70b')!.shape).total, 70_553_706_496);
  });

  it('an untied head adds vocabulary × d_model', () => {
    assert.equal(parameterCounts({ ...TINY, tieEmbeddings: false }).total, P + 16 * 8);
  });
});

// PyTorch (plain, DDP, FSDP2) is replayed tensor by tensor: test/unit/memory-pytorch.test.ts.

describe('memory model: DeepSpeed ZeRO (Rajbhandari et al. 2020: 2Ψ + 2Ψ + 12Ψ)', () => {
  const base = (strategy: MemoryInput['strategy']) => {
    const input = tiny({
      framework: 'deepspeed',
      strategy,
      nprocPerNode: 64,
      precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' },
    });
    input.zero = { ...input.zero, paramPersistenceThreshold: 0 };
    const e = estimateMemory(input);
    return e.categoryPeaks.params + e.categoryPeaks.grads + e.categoryPeaks.optimizer;
  };
  it('stage 0: 16Ψ; stage 1: 4Ψ + 12Ψ/N; stage 2: 2Ψ + 14Ψ/N; stage 3: 16Ψ/N', () => {
    assert.equal(base('NO_SHARD'), 16 * P);
    assert.equal(base('SHARD_OPTIMIZER'), 4 * P + (12 * P) / 64);
    assert.equal(base('SHARD_GRAD_OP'), 2 * P + (14 * P) / 64);
    assert.equal(base('FULL_SHARD'), (16 * P) / 64);
  });

  it('sizes buffers from the config, never larger than the model', () => {
    const input = tiny({ framework: 'deepspeed', strategy: 'SHARD_GRAD_OP', nprocPerNode: 2 });
    input.zero = { ...input.zero, reduceBucketSize: 100 };
    assert.equal(term(estimateMemory(input), 'comm.reduce-bucket', 'backward'), 400);
    input.zero = { ...input.zero, reduceBucketSize: 5e8 };
    assert.equal(term(estimateMemory(input), 'comm.reduce-bucket', 'backward'), 4 * P);
  });
});

describe("memory model: our runtime's plan (native/MEMORY.md) by hand", () => {
  it('NO_SHARD on one rank, fp32: masters, gradients, moments, activation timeline, scratch, batches', () => {
    const e = estimateMemory(tiny({ framework: 'fsdp-studio', attention: 'eager' }));
    // R = 4·16·8 = 512; I = 4(7·128 + 2·512 + 2·2·64) + 16·16 = 8960; Hd = 4·128 + 12·16 + 4·16·16 = 1728
    // kept = 3R + 2I = 19456; forward activations = kept + max(Hd, I − I) = 21184; scratch 4(6·128 + 512 + 256) = 6144
    const acts = 19456 + 1728;
    const batches = 3 * 8 * 16;
    assert.equal(e.phases[0].bytes.total, 4 * P + 4 * P + 8 * P + acts + batches);
    assert.equal(e.phases[1].bytes.total, 4 * P + 4 * P + 8 * P + acts + 6144 + batches);
    assert.equal(e.phases[2].bytes.total, 4 * P + 4 * P + 8 * P + batches);
    assert.equal(e.categoryPeaks.workspace, 6144);
  });

  it('pads units to a multiple of the shard degree', () => {
    const e = estimateMemory(tiny({ framework: 'fsdp-studio', strategy: 'FULL_SHARD', nprocPerNode: 3 }));
    const shards = Math.ceil(192 / 3) + 2 * Math.ceil(872 / 3) + Math.ceil(16 / 3);
    assert.equal(term(e, 'params.masters', 'forward'), 4 * shards);
  });
});
