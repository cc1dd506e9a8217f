// Every term of the memory model against values computed by hand for a tiny GPT (d_model 8,
// 2 blocks, 2 heads, vocabulary 16, 8 positions, MLP 32, tied head; micro-batch 2 × 8 tokens).
import assert from 'node:assert/strict';
import { estimateMemory } from '../../core/memory/estimate';
import type { MemoryEstimate, Phase } from '../../core/memory/memory-estimate';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import { findModelPreset } from '../../core/memory/model-presets';
import { parameterCounts, type ModelShape } from '../../core/memory/model-shape';

const TINY: ModelShape = { name: 'tiny', vocabSize: 16, dModel: 8, nLayers: 2, nHeads: 2, nKvHeads: 2, ffnHidden: 32, mlp: 'gelu', norm: 'layernorm', bias: true, positionEmbeddings: 8, tieEmbeddings: true };
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
    assert.deepEqual(parameterCounts(TINY), { embedding: 192, block: 872, finalNorm: 16, head: 0, root: 208, total: P });
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

describe('memory model: PyTorch terms (tiny GPT, fp32, flash attention)', () => {
  const e = estimateMemory(tiny());

  it('keeps fp32 parameters, AdamW moments and (at the step) fp32 gradients and the foreach intermediate', () => {
    assert.equal(term(e, 'params.master', 'forward'), 4 * P);
    assert.equal(term(e, 'optimizer.adamw', 'forward'), 8 * P);
    assert.equal(term(e, 'grads.fp32', 'forward'), 0, 'zero_grad(set_to_none) frees gradients before forward');
    assert.equal(term(e, 'grads.fp32', 'optimizer'), 4 * P);
    assert.equal(term(e, 'workspace.optimizer', 'optimizer'), 4 * P);
  });

  it('saves per block what autograd keeps (Korthikanti terms), plus the final norm and the logits', () => {
    // t = 16 tokens, 4 bytes. Attention: norm1 in, qkv in, q, k, v, proj in = 48 values/token → 3072,
    // LayerNorm stats 8 B/token → 128, flash logsumexp 2 heads · 16 · 4 → 128: 3328.
    // MLP: norm2 in + fc in = 16 values/token → 1024, stats 128, GELU in + out 2 · 16 · 32 · 4 → 4096: 5248.
    const block = 3328 + 5248;
    const outside = 16 * 4 * 16 + 128; // final norm in + head in, stats
    assert.equal(term(e, 'activations.blocks', 'forward'), 2 * block + outside);
    // logits 16 × 16 fp32 (1024) and log_softmax's fp32 output (1024); no upcast in fp32.
    assert.equal(term(e, 'activations.logits', 'forward'), 2048);
    assert.equal(term(e, 'activations.logits', 'backward'), 1024, 'after the loss, only the returned logits stay');
  });

  it('finds the backward peak in the last block\'s backward and reports the largest phase', () => {
    // Step 1 (block 1's backward): both blocks' saved tensors 2·8576 + 1152, its transient
    // 2·16·32·4 + 2·16·8·4 = 5120, logits 1024, gradients of final LN + one block (16 + 872)·4.
    const backward = 4 * P + 8 * P + (2 * 8576 + 1152) + 5120 + 1024 + (16 + 872) * 4;
    const forward = 4 * P + 8 * P + (2 * 8576 + 1152) + 2048;
    const optimizer = 4 * P + 4 * P + 8 * P + 4 * P;
    assert.deepEqual(e.phases.map((p) => [p.phase, p.bytes.total]), [['forward', forward], ['backward', backward], ['optimizer', optimizer]]);
    assert.equal(e.peakPhase, 'backward');
    assert.equal(e.peak.total, backward);
    assert.equal(e.categoryPeaks.grads, 4 * P);
  });

  it('bf16 autocast keeps weight casts, upcasts the logits to fp32, and halves the saved activations', () => {
    const b = estimateMemory(tiny({ precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' } }));
    assert.equal(term(b, 'params.autocast-copies', 'forward'), 2 * (2 * 872 + 16 * 8));
    // logits bf16 512 + fp32 copy 1024 + log_softmax output 1024
    assert.equal(term(b, 'activations.logits', 'forward'), 512 + 1024 + 1024);
    assert.equal(term(b, 'activations.blocks', 'forward'), 2 * (2 * 16 * 48 + 128 + 128 + 2 * 16 * 16 + 128 + 2 * 16 * 32 * 2) + 2 * 16 * 16 + 128);
  });

  it('eager attention keeps the b·heads·s² probabilities per block; dropout adds their mask and output', () => {
    const eager = estimateMemory(tiny({ attention: 'eager' }));
    const flash = estimateMemory(tiny());
    const probs = 2 * 2 * 8 * 8 * 4; // batch · heads · s² · 4 bytes
    assert.equal(term(eager, 'activations.blocks', 'forward') - term(flash, 'activations.blocks', 'forward'), 2 * (probs - 128));
    const dropout = estimateMemory(tiny({ attention: 'eager', dropout: 0.1 }));
    // per block: probability mask (1 B) and dropped probabilities (4 B), two residual-dropout masks 16·8; embedding mask 16·8
    const extra = 2 * (2 * 2 * 64 * (1 + 4) + 2 * 16 * 8) + 16 * 8;
    assert.equal(term(dropout, 'activations.blocks', 'forward') - term(eager, 'activations.blocks', 'forward'), extra);
  });

  it('every_n checkpointing keeps only the input of blocks n-1, 2n-1, … and recomputes one in backward', () => {
    const full = estimateMemory(tiny());
    const every2 = estimateMemory(tiny({ checkpointing: { policy: 'every_n', everyN: 2 } }));
    assert.equal(term(full, 'activations.blocks', 'forward') - term(every2, 'activations.blocks', 'forward'), 8576 - 16 * 8 * 4);
    // Block 1 is checkpointed: its backward (step 1) recomputes its 8576 bytes over the kept input.
    assert.equal(every2.checkpointing.policy, 'every_n');
    const every1 = estimateMemory(tiny({ checkpointing: { policy: 'every_n', everyN: 1 } }));
    assert.equal(term(every1, 'activations.blocks', 'forward'), 2 * 16 * 8 * 4 + 16 * 4 * 16 + 128);
  });

  it('selective checkpointing keeps block input, q/k/v, attention out, residual and fc out (+ logsumexp)', () => {
    const sel = estimateMemory(tiny({ checkpointing: { policy: 'selective', everyN: 1 } }));
    const perBlock = 16 * 4 * (8 + 8 + 16 + 8 + 8) + 128 + 16 * 4 * 32;
    assert.equal(term(sel, 'activations.blocks', 'forward'), 2 * perBlock + 16 * 4 * 16 + 128);
  });
});

describe('memory model: sharding (PyTorch FSDP2 and DDP)', () => {
  it('FULL_SHARD over 4 ranks keeps a quarter of parameters, gradients and moments', () => {
    const e = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4 }));
    assert.equal(term(e, 'params.master', 'forward'), P);
    assert.equal(term(e, 'grads.fp32', 'optimizer'), P);
    assert.equal(term(e, 'optimizer.adamw', 'optimizer'), 2 * P);
  });

  it('gathers the root unit and two block units in forward; BACKWARD_POST gathers one in backward', () => {
    const pre = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4 }));
    assert.equal(term(pre, 'comm.gathered', 'forward'), (208 + 2 * 872) * 4);
    const post = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4, fsdp: { backwardPrefetch: 'BACKWARD_POST', forwardPrefetch: false } }));
    assert.ok(term(post, 'comm.gathered', 'backward') <= (208 + 872) * 4);
  });

  it('SHARD_GRAD_OP keeps every unit gathered from forward to backward', () => {
    const e = estimateMemory(tiny({ strategy: 'SHARD_GRAD_OP', nprocPerNode: 4 }));
    assert.equal(term(e, 'comm.gathered', 'forward'), P * 4);
  });

  it('DDP holds a second copy of the gradients in its buckets unless gradients are bucket views', () => {
    const ddp = estimateMemory(tiny({ nprocPerNode: 2 }));
    assert.equal(term(ddp, 'comm.ddp-buckets', 'forward'), 4 * P);
    const views = estimateMemory(tiny({ nprocPerNode: 2, ddp: { bucketCapMb: 25, gradientAsBucketView: true } }));
    assert.equal(views.terms.find((t) => t.id === 'grads.fp32'), undefined);
  });

  it('HYBRID_SHARD shards within a node only', () => {
    const e = estimateMemory(tiny({ strategy: 'HYBRID_SHARD', nprocPerNode: 2, nnodes: 4 }));
    assert.equal(term(e, 'params.master', 'forward'), 2 * P);
  });

  it('offload moves parameter shards, gradients and moments to host memory, counted per node', () => {
    const e = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4, offload: { optimizer: true, params: true } }));
    assert.equal(e.host.perRank, P + P + 2 * P + P);
    assert.equal(e.host.perNode, 4 * e.host.perRank);
    assert.equal(e.peak.params + e.peak.optimizer + e.peak.grads, 0);
  });
});

describe('memory model: DeepSpeed ZeRO (Rajbhandari et al. 2020: 2Ψ + 2Ψ + 12Ψ)', () => {
  const base = (strategy: MemoryInput['strategy']) => {
    const input = tiny({ framework: 'deepspeed', strategy, nprocPerNode: 64, precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' } });
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

describe('memory model: our runtime\'s plan (native/MEMORY.md) by hand', () => {
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
