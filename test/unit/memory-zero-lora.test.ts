// DeepSpeed ZeRO over a PEFT LoRA model (issue 36), against byte counts worked out by hand from how
// DeepSpeed holds frozen and trainable parameters (core/memory/frameworks/deepspeed.ts: stages 1–2
// step and partition only requires_grad parameters, stage 3 partitions every parameter; the reduce
// buckets are reduce_bucket_size whatever the gradients), and the reading of a TRL config with its
// DeepSpeed file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configMemory, type ConfigMemory } from '../../core/memory/config-memory';
import { estimateMemory } from '../../core/memory/estimate';
import { deepspeedTerms, ZERO_LORA_UNSURE } from '../../core/memory/frameworks/deepspeed';
import { loraActivations, zeroLora } from '../../core/memory/frameworks/deepspeed-lora';
import type { TermSpec } from '../../core/memory/frameworks/term-spec';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import { defaultMemoryInput, ZERO_DEFAULTS, type LoraPlan, type MemoryInput } from '../../core/memory/memory-input';
import type { ModelShape } from '../../core/memory/model-shape';

// The Llama-shaped toy of memory-lora.test.ts: vocabulary 1000, width 64, 2 blocks, 4 heads of 16 with 2
// key/value heads, SwiGLU of 128, RMSNorm, no biases, untied head: 202,048 parameters.
const TOY: ModelShape = {
  name: 'toy-llama',
  vocabSize: 1000,
  dModel: 64,
  nLayers: 2,
  nHeads: 4,
  nKvHeads: 2,
  ffnHidden: 128,
  mlp: 'swiglu',
  norm: 'rmsnorm',
  bias: false,
  positionEmbeddings: 0,
  tieEmbeddings: false,
};
const LORA: LoraPlan = {
  r: 8,
  alpha: 16,
  dropout: 0,
  targets: 'all-linear',
  modulesToSave: [],
  adapterDtype: 'float32',
};

function zeroInput(stage: 1 | 2 | 3, extra: Partial<MemoryInput> = {}): MemoryInput {
  return {
    ...defaultMemoryInput(TOY, 32),
    framework: 'deepspeed',
    device: 'cpu',
    strategy: (['NO_SHARD', 'SHARD_OPTIMIZER', 'SHARD_GRAD_OP', 'FULL_SHARD'] as const)[stage],
    nprocPerNode: 2,
    microBatch: 2,
    precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' },
    zero: { ...ZERO_DEFAULTS, reduceBucketSize: 1_000_000, overlapComm: true },
    lora: LORA,
    ...extra,
  };
}

const term = (terms: TermSpec[], id: string) => {
  const t = terms.find((x) => x.id === id);
  assert.ok(t, `no term ${id} in ${terms.map((x) => x.id).join(', ')}`);
  return t;
};
const backwardAt = (t: TermSpec, step: number) => (typeof t.backward === 'function' ? t.backward(step) : t.backward);

describe('ZeRO over a LoRA model, held to hand-computed byte counts', () => {
  it('lists the trainable tensors ZeRO partitions: each adapted linear’s lora_A and lora_B, block by block', () => {
    const lora = zeroLora(zeroInput(2))!;
    // Per block at r 8: q A 8·64, B 64·8; k and v A 8·64, B 32·8; o A 8·64, B 64·8; gate and up A 8·64, B 128·8;
    // down A 8·128, B 64·8 → 1,024 + 768 + 768 + 1,024 + 1,536 + 1,536 + 1,536 = 8,192; two blocks 16,384.
    assert.equal(lora.perBlock, 8_192);
    assert.equal(lora.trainable, 16_384);
    assert.equal(lora.tensors.length, 28);
    // modules_to_save [lm_head]: a trainable copy of the head, 1000 · 64 more.
    const saved = zeroLora(zeroInput(2, { lora: { ...LORA, modulesToSave: ['lm_head'] } }))!;
    assert.equal(saved.trainable, 16_384 + 64_000);
  });

  it('stage 2: the frozen base whole in bf16, gradients, fp32 masters and Adam states of the adapters’ half only', () => {
    const { terms } = deepspeedTerms(zeroInput(2));
    // Every parameter cast to bf16 by the engine: (202,048 base + 16,384 adapters) × 2 = 436,864 on each rank.
    assert.equal(term(terms, 'params.model').forward, 436_864);
    // Half of the 16,384 adapter elements per rank: bf16 gradients 8,192 × 2; fp32 master and two Adam
    // states 8,192 × 12; the fp32 gradient partition at the step 8,192 × 4.
    assert.equal(term(terms, 'grads.model').forward, 16_384);
    assert.equal(term(terms, 'optimizer.adam').optimizer, 98_304);
    assert.equal(term(terms, 'workspace.fp32-grads').optimizer, 32_768);
    // Two reduce buckets (overlap_comm) of the full reduce_bucket_size, 1,000,000 bf16 elements each, far
    // larger than the 16,384 gradients they reduce; made at the first trainable gradient (a block's), so
    // not during the loss and the frozen head (backward step 0).
    const bucket = term(terms, 'comm.reduce-bucket');
    assert.equal(backwardAt(bucket, 0), 0);
    assert.equal(backwardAt(bucket, 1), 4_000_000);
    assert.equal(bucket.forward, 0);
    // The updated bf16 partition all-gathered in place into the flat trainable group: at most its 16,384 elements.
    assert.equal(term(terms, 'comm.allgather-bucket').optimizer, 32_768);
  });

  it('stage 1: the gradients of every adapter, the optimizer states of half', () => {
    const { terms } = deepspeedTerms(zeroInput(1));
    assert.equal(term(terms, 'grads.model').forward, 32_768);
    assert.equal(term(terms, 'optimizer.adam').optimizer, 98_304);
  });

  it('stage 3: every parameter partitioned, frozen ones included, small ones kept whole; the bucket kept from set-up', () => {
    const input = zeroInput(3, {
      zero: {
        ...ZERO_DEFAULTS,
        reduceBucketSize: 1_000_000,
        paramPersistenceThreshold: 600,
        prefetchBucketSize: 10_000,
      },
    });
    const { terms } = deepspeedTerms(input);
    // Below the threshold of 600 elements: the norms (2 · 64 a block, 64 final → 320) and per block nine
    // adapter tensors of 512 and two of 256 (5,120; 10,240 for both). The other 218,432 − 10,560 = 207,872
    // are split in two: 103,936 + 10,560 = 114,496 elements, × 2 bytes.
    assert.equal(term(terms, 'params.model').forward, 228_992);
    assert.equal(term(terms, 'grads.model').forward, 16_384);
    assert.equal(term(terms, 'optimizer.adam').optimizer, 98_304);
    // stage3.py allocates its one reduce buffer at set-up and keeps it: 1,000,000 × 2 in every phase.
    const bucket = term(terms, 'comm.reduce-bucket');
    assert.deepEqual([bucket.forward, backwardAt(bucket, 0), bucket.optimizer], [2_000_000, 2_000_000, 2_000_000]);
    // Gathered: the largest module (the 64,000-element head; a block is 36,992 + 8,192) and the prefetch bucket.
    assert.equal(term(terms, 'comm.gathered').forward, (64_000 + 10_000) * 2);
    // stage3_max_reuse_distance keeps reused parameters gathered (not modelled): the range reaches all 207,872
    // partitioned elements gathered (below max_live_parameters), 415,744 bytes, less the 148,000 counted.
    const e = estimateMemory(input);
    assert.deepEqual([e.unsure?.low, e.unsure?.high], [e.peak.total, e.peak.total + 415_744 - 148_000]);
  });

  it("takes the PEFT model's activations from the replay, split at the first trainable gradient", () => {
    const input = zeroInput(2);
    const acts = loraActivations(input);
    const a = term(deepspeedTerms(input).terms, 'activations.lora');
    assert.equal(a.forward, acts.forward);
    assert.equal(backwardAt(a, 0), acts.beforeFirstGrad);
    assert.equal(backwardAt(a, 3), acts.afterFirstGrad);
    // The loss's fp32 logits (64 tokens × 1,000 × 4 bytes, three of them in its backward) exceed what the
    // blocks keep after it.
    assert.ok(acts.beforeFirstGrad > acts.afterFirstGrad, JSON.stringify(acts));
    assert.ok(acts.beforeFirstGrad >= 3 * 64 * 1000 * 4, JSON.stringify(acts));
  });

  it('keeps full fine-tuning as it was: every parameter trainable, the bucket capped at the model', () => {
    const { terms } = deepspeedTerms(zeroInput(2, { lora: undefined }));
    assert.equal(term(terms, 'params.model').forward, 202_048 * 2);
    assert.equal(term(terms, 'grads.model').forward, 202_048);
    assert.equal(backwardAt(term(terms, 'comm.reduce-bucket'), 0), 2 * 202_048 * 2);
    assert.equal(deepspeedTerms(zeroInput(2, { lora: undefined })).unsure, undefined);
  });

  it('shows the estimate on a GPU as a range: the fragmentation margin either way, one reduce bucket more above', () => {
    const e = estimateMemory(zeroInput(2, { device: 'cuda' }));
    assert.equal(e.unsure?.why, ZERO_LORA_UNSURE);
    const margin = e.terms.find((t) => t.id === 'other.fragmentation')!.bytes[e.peakPhase];
    assert.ok(margin > 0);
    assert.equal(e.unsure!.low, e.peak.total - margin);
    assert.equal(e.unsure!.high, e.peak.total + margin + 2_000_000);
  });
});

describe('ZeRO over LoRA read from a TRL config and its DeepSpeed file', () => {
  const TRL = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
use_peft: true
lora_r: 16
lora_target_modules: all-linear
gradient_checkpointing: true
bf16: true
per_device_train_batch_size: 4
max_length: 2048
num_processes: 2
deepspeed: ds_config.json
`;
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-zero-lora-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function read(ds: object, trl = TRL): ConfigMemory {
    writeFileSync(path.join(dir, 'ds_config.json'), JSON.stringify(ds));
    const file = path.join(dir, 'sft.yaml');
    const m = configMemory('hf-training', trl, file, {}, hfModelSource(file));
    assert.ok(!('error' in m), 'error' in m ? m.error : '');
    return m;
  }

  it('models LoRA under ZeRO 2 and 3, fills "auto" buckets from the width as transformers does, and shows a range', () => {
    const ds = {
      bf16: { enabled: 'auto' },
      zero_optimization: {
        stage: 3,
        reduce_bucket_size: 'auto',
        stage3_prefetch_bucket_size: 'auto',
        stage3_param_persistence_threshold: 'auto',
      },
    };
    const z3 = read(ds);
    assert.equal(z3.read.input.notModelled, undefined);
    assert.equal(z3.read.input.lora?.r, 16);
    // Llama 3 8B's width 4096: reduce_bucket_size 4096², prefetch 0.9 · 4096², persistence 10 · 4096.
    assert.equal(z3.read.input.zero.reduceBucketSize, 16_777_216);
    assert.equal(z3.read.input.zero.prefetchBucketSize, 15_099_494);
    assert.equal(z3.read.input.zero.paramPersistenceThreshold, 40_960);
    // The adapters (41,943,040 elements, all-linear r 16) are what Adam steps: fp32 master and two states of half.
    assert.equal(z3.estimate.categoryPeaks.optimizer, (41_943_040 / 2) * 12);
    assert.equal(z3.estimate.unsure?.why, ZERO_LORA_UNSURE);
    assert.equal(z3.estimate.fit?.atRangeTop, true);
    assert.match(z3.title, /up to [\d.]+ GiB/);
    const z2 = read({ ...ds, zero_optimization: { stage: 2 } });
    // Stage 2 keeps the whole bf16 base on each rank: some 7.5 GiB more than stage 3's half.
    const params = (m: ConfigMemory) => m.estimate.categoryPeaks.params;
    assert.ok(params(z2) - params(z3) > 7e9, `${params(z2)} vs ${params(z3)}`);
    // Full fine-tuning of the same config under ZeRO 3 steps all 8.03 B parameters.
    const full = read(ds, TRL.replace('use_peft: true\n', ''));
    assert.ok(full.estimate.categoryPeaks.optimizer > 40 * z3.estimate.categoryPeaks.optimizer);
  });

  it('still names LoRA and 4-bit under ZeRO over a bitsandbytes base', () => {
    const m = read({ zero_optimization: { stage: 2 } }, `${TRL}load_in_4bit: true\n`);
    assert.deepEqual(
      m.read.input.notModelled?.map((n) => n.what),
      ['LoRA', '4-bit'],
    );
    assert.equal(m.read.input.lora, undefined);
  });
});
