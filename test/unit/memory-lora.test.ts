// LoRA, QLoRA and bf16 weights in the PyTorch replay (issue 36), against byte counts worked out by
// hand from how PEFT, bitsandbytes and torch.optim.AdamW hold them. The replay runs on the CPU here
// (no caching allocator), so each term is the plain sum of its tensors' bytes.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import { configMemory, type ConfigMemory } from '../../core/memory/config-memory';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { maxMicroBatch } from '../../core/memory/inverse-questions';
import { loraFromAdapterConfig, peftFromHf } from '../../core/memory/inputs/peft-settings';
import { adaptedModules, loraElementsPerBlock, quantizedBytes } from '../../core/memory/lora';
import { defaultMemoryInput, type LoraPlan, type MemoryInput } from '../../core/memory/memory-input';
import { findModelPreset } from '../../core/memory/model-presets';
import type { ModelShape } from '../../core/memory/model-shape';

// A Llama-shaped toy: vocabulary 1000, width 64, 2 blocks, 4 heads of 16 with 2 key/value heads,
// SwiGLU of 128, RMSNorm, no biases, untied head.
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

function cpu(extra: Partial<MemoryInput>): MemoryInput {
  return { ...defaultMemoryInput(TOY, 32), device: 'cpu', strategy: 'NO_SHARD', microBatch: 2, ...extra };
}

/** Each category's bytes in the optimizer step (parameters, gradients, AdamW states all live). */
function atStep(input: MemoryInput) {
  const e = estimateMemory(input);
  const p = e.phases.find((x) => x.phase === 'optimizer')!.bytes;
  return { params: p.params, grads: p.grads, optimizer: p.optimizer, estimate: e };
}

describe('LoRA and QLoRA memory, held to hand-computed byte counts', () => {
  it('counts bitsandbytes 4-bit and 8-bit weights as bitsandbytes stores them', () => {
    // A 4096 × 4096 linear (Llama-3-8B's q_proj): 16,777,216 elements.
    // NF4: two codes a byte → 8,388,608; one fp32 absmax per 64 elements → 262,144 × 4 = 1,048,576;
    // the 16-entry fp32 code → 64. Sum 9,437,248 (4.5 bits per element).
    assert.equal(quantizedBytes(4096 * 4096, 4096, 'nf4', false), 8_388_608 + 1_048_576 + 64);
    // Nested: the 262,144 absmax as uint8 → 262,144; their own fp32 absmax per 256 → 1,024 × 4 = 4,096;
    // the 256-entry fp32 code → 1,024; the fp32 offset → 4; the 16-entry code → 64. Sum 8,655,940.
    assert.equal(quantizedBytes(4096 * 4096, 4096, 'fp4', true), 8_388_608 + 262_144 + 4_096 + 1_024 + 4 + 64);
    // int8: a byte per element and an fp32 scale per output row: 16,777,216 + 4,096 × 4 = 16,793,600.
    assert.equal(quantizedBytes(4096 * 4096, 4096, 'int8', false), 16_793_600);
  });

  it("counts a SmolLM2-360M block's seven NF4 linears with nested absmax as bitsandbytes 0.50.2 held them on the CPU", () => {
    // q, o 960 × 960; k, v 320 × 960; gate, up 2,560 × 960; down 960 × 2,560: 9,830,400 elements a block.
    // Codes ½ byte: 4,915,200. uint8 absmax per 64: 153,600. Nested fp32 absmax per 256 blocks, rounded up per
    // weight: 14,400 → 57, 4,800 → 19 (twice), 14,400 → 57, 38,400 → 150 (three times): 602 × 4 = 2,408.
    // Per weight the 256-entry code, the offset and the 16-entry code: 7 × 1,092 = 7,644.
    // The QuantState tensors of 4 blocks, counted storage by storage in bench/memory-lora/measure_qlora.py's
    // first run (SmolLM2-360M, 4 blocks): 654,608 = 4 × (153,600 + 2,408 + 7,644).
    const linears: Array<[number, number]> = [
      [960, 960],
      [960, 320],
      [960, 320],
      [960, 960],
      [960, 2560],
      [960, 2560],
      [2560, 960],
    ];
    const block = linears.reduce((s, [i, o]) => s + quantizedBytes(i * o, o, 'nf4', true), 0);
    assert.equal(block, 4_915_200 + 153_600 + 2_408 + 7_644);
    assert.equal(4 * (block - 4_915_200), 654_608);
  });

  it('counts the adapters PEFT makes for Llama-3-8B: all-linear and q/v at r 16 (the figures PEFT prints)', () => {
    const llama = findModelPreset('llama-3-8b')!.shape;
    // Per block, r × (in + out) each: q 16·(4096+4096) = 131,072, k and v 16·(4096+1024) = 81,920,
    // o 131,072, gate, up and down 16·(4096+14336) = 294,912 → 1,310,720; × 32 blocks = 41,943,040.
    assert.equal(32 * loraElementsPerBlock(llama, { ...LORA, r: 16 }), 41_943_040);
    // q and v only: 131,072 + 81,920 = 212,992 per block; × 32 = 6,815,744.
    assert.equal(32 * loraElementsPerBlock(llama, { ...LORA, r: 16, targets: ['q_proj', 'v_proj'] }), 6_815_744);
    // No targets named: PEFT's default for the family, q and v.
    assert.deepEqual(
      adaptedModules(llama, { ...LORA, targets: [] }).map((m) => m.names[0]),
      ['q_proj', 'v_proj'],
    );
  });

  it('holds frozen bf16 weights, fp32 adapters, their gradients and AdamW states, and nothing for the base', () => {
    const got = atStep(cpu({ weights: { dtype: 'bfloat16' }, lora: LORA }));
    // Base in bf16 (2 bytes): embedding 1000·64 = 64,000 → 128,000; per block the norms 2·64 = 128 and
    // the linears q 64·64 = 4,096, k and v 64·32 = 2,048, o 4,096, gate, up, down 64·128 = 8,192 →
    // 36,864; 36,992 elements → 73,984 bytes, × 2 blocks = 147,968; final norm 64 → 128; head 128,000.
    // Base 404,096. Adapters at r 8 per block: q 8·128 = 1,024, k and v 8·96 = 768, o 1,024, gate,
    // up, down 8·192 = 1,536 → 8,192, × 2 blocks = 16,384 elements, fp32 → 65,536. Sum 469,632.
    assert.equal(got.params, 404_096 + 65_536);
    // Gradients only for the adapters (fp32): 65,536; AdamW's exp_avg and exp_avg_sq: 2 × 65,536.
    assert.equal(got.grads, 65_536);
    assert.equal(got.optimizer, 131_072);
  });

  it("adds DDP's buckets for the adapters' gradients only, once more, at 2 ranks (measured: bench:memory-lora -- --world 2)", () => {
    const one = estimateMemory(cpu({ weights: { dtype: 'bfloat16' }, lora: LORA }));
    const two = estimateMemory(cpu({ weights: { dtype: 'bfloat16' }, lora: LORA, nprocPerNode: 2 }));
    // The 16,384 fp32 adapter elements above (65,536 bytes) in one 25 MB bucket; the frozen base has none.
    const buckets = two.terms.find((t) => t.id === 'comm.ddp-buckets')!;
    assert.equal(buckets.bytes.optimizer, 65_536);
    assert.equal(two.peak.total - one.peak.total, 65_536);
    // gradient_as_bucket_view: the gradients are views into the buckets, no second copy.
    const view = cpu({ weights: { dtype: 'bfloat16' }, lora: LORA, nprocPerNode: 2 });
    view.ddp = { ...view.ddp, gradientAsBucketView: true };
    assert.equal(estimateMemory(view).peak.total, one.peak.total);
  });

  it('shards the frozen base and the adapters under FSDP2 at 2 ranks; only the adapters get gradients and states (measured: bench:memory-lora -- --world 2 --fsdp)', () => {
    const input = cpu({ lora: LORA, strategy: 'FULL_SHARD', nprocPerNode: 2 });
    const got = atStep(input);
    // fp32 base: the 202,048 elements above (every tensor even) in halves → 101,024 × 4 = 404,096 a rank;
    // the 16,384 adapter elements (each tensor even) → 8,192 × 4 = 32,768. Nothing stays gathered at the step.
    assert.equal(got.params, 404_096 + 32_768);
    // Only the adapters were reduce-scattered: their shards' gradients, 32,768; AdamW's two states of them, 65,536.
    assert.equal(got.grads, 32_768);
    assert.equal(got.optimizer, 65_536);
    // In forward a block's unit gathers its frozen base and its adapters alike: (36,992 + 8,192) × 4 = 180,736,
    // beside the root's (embedding 64,000 + final norm 64 + head 64,000) × 4 = 512,256, gathered until backward.
    const gathered = got.estimate.terms.find((t) => t.id === 'comm.gathered')!;
    assert.equal(gathered.bytes.forward, 512_256 + 180_736);
    // Full fine-tuning under FSDP2 shards gradients and states of every parameter: 404,096 and 808,192.
    const fullFt = atStep(cpu({ strategy: 'FULL_SHARD', nprocPerNode: 2 }));
    assert.equal(fullFt.grads, 404_096);
    assert.equal(fullFt.optimizer, 808_192);
  });

  it("holds NF4 weights with their absmax and bf16 adapters (TRL casts a quantised model's adapters to bf16)", () => {
    const got = atStep(
      cpu({
        weights: { dtype: 'bfloat16', quant: { kind: 'nf4', doubleQuant: false, computeDtype: 'bfloat16' } },
        lora: { ...LORA, adapterDtype: 'bfloat16' },
      }),
    );
    // Each linear: codes numel/2 + absmax ⌈numel/64⌉·4 + code 64: q and o 2,048 + 256 + 64 = 2,368,
    // k and v 1,024 + 128 + 64 = 1,216, gate, up, down 4,096 + 512 + 64 = 4,672 → 21,184 a block;
    // with the bf16 norms (256) 21,440, × 2 = 42,880. Embedding and head stay bf16 (bitsandbytes
    // leaves lm_head): 128,000 each; final norm 128. Base 299,008. Adapters 16,384 × 2 = 32,768.
    assert.equal(got.params, 299_008 + 32_768);
    assert.equal(got.grads, 32_768);
    assert.equal(got.optimizer, 65_536);
  });

  it('trains modules_to_save whole: a copy beside the frozen original, with its gradient and states', () => {
    const got = atStep(cpu({ weights: { dtype: 'bfloat16' }, lora: { ...LORA, modulesToSave: ['lm_head'] } }));
    // The head's trainable copy: 64,000 bf16 elements → 128,000 bytes, its gradient 128,000, states 256,000.
    assert.equal(got.params, 404_096 + 65_536 + 128_000);
    assert.equal(got.grads, 65_536 + 128_000);
    assert.equal(got.optimizer, 131_072 + 256_000);
  });

  it('keeps full fine-tuning in the dtype the weights are loaded in: bf16 weights, gradients and states', () => {
    const got = atStep(cpu({ weights: { dtype: 'bfloat16' } }));
    // 202,048 parameters (404,096 bytes above / 2) at 2 bytes each, for each of the four.
    assert.equal(got.params, 404_096);
    assert.equal(got.grads, 404_096);
    assert.equal(got.optimizer, 2 * 404_096);
    const fp32 = atStep(cpu({}));
    assert.equal(fp32.params, 2 * 404_096);
  });

  it('keeps fewer activations for q/v adapters than for every linear, and more again with dropout', () => {
    const acts = (lora: LoraPlan) =>
      estimateMemory(cpu({ weights: { dtype: 'bfloat16' }, lora })).categoryPeaks.activations;
    const qv = acts({ ...LORA, targets: ['q_proj', 'v_proj'] });
    const all = acts(LORA);
    const dropout = acts({ ...LORA, dropout: 0.05 });
    assert.ok(qv < all && all < dropout, `${qv} < ${all} < ${dropout}`);
  });
});

describe('LoRA and quantisation read from a TRL config and a PEFT adapter_config.json', () => {
  it("takes TRL's defaults for what a config leaves out, and its keys where set", () => {
    const get = (values: Record<string, unknown>) => (p: (string | number)[]) => values[p.join('.')];
    const plain = peftFromHf(get({ use_peft: true }));
    assert.deepEqual(plain.lora, {
      r: 16,
      alpha: 32,
      dropout: 0.05,
      targets: [],
      modulesToSave: [],
      adapterDtype: 'float32',
    });
    assert.equal(plain.weights, undefined);
    const q = peftFromHf(
      get({
        use_peft: true,
        lora_r: 64,
        lora_target_modules: 'all-linear',
        lora_modules_to_save: ['lm_head'],
        load_in_4bit: true,
        bnb_4bit_quant_type: 'fp4',
        use_bnb_nested_quant: true,
        bnb_4bit_compute_dtype: 'bfloat16',
        'model_init_kwargs.dtype': 'float16',
      }),
    );
    assert.equal(q.lora?.r, 64);
    assert.equal(q.lora?.targets, 'all-linear');
    assert.equal(q.lora?.adapterDtype, 'bfloat16');
    assert.deepEqual(q.weights, {
      dtype: 'float16',
      quant: { kind: 'fp4', doubleQuant: true, computeDtype: 'bfloat16' },
    });
    assert.equal(peftFromHf(get({ use_peft: true, load_in_8bit: true })).weights?.quant?.kind, 'int8');
  });

  it('reads a PEFT adapter_config.json and refuses what is not LoRA, by name', () => {
    const lora = loraFromAdapterConfig({
      peft_type: 'LORA',
      r: 8,
      lora_alpha: 16,
      lora_dropout: 0.1,
      target_modules: ['q_proj', 'v_proj'],
      modules_to_save: null,
    });
    assert.deepEqual(lora, {
      r: 8,
      alpha: 16,
      dropout: 0.1,
      targets: ['q_proj', 'v_proj'],
      modulesToSave: [],
      adapterDtype: 'float32',
    });
    assert.equal(loraFromAdapterConfig({ peft_type: 'IA3', r: 8 }), 'peft_type IA3 is not LoRA');
    assert.equal(loraFromAdapterConfig({ peft_type: 'LORA', r: 0 }), 'r 0 is not a positive integer');
  });

  it("estimates the issue's TRL QLoRA YAML far below its full fine-tuning, and names LoRA under FSDP", () => {
    const yaml = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
use_peft: true
lora_r: 16
lora_target_modules: all-linear
load_in_4bit: true
gradient_checkpointing: true
per_device_train_batch_size: 4
max_length: 2048
`;
    const read = (text: string): ConfigMemory => {
      const m = configMemory('hf-training', text, '/w/sft.yaml');
      assert.ok(!('error' in m), 'error' in m ? m.error : '');
      return m;
    };
    const qlora = read(yaml);
    // The frozen base: 32 blocks of NF4 linears (6,979,321,856 elements → 3,489,660,928 bytes of codes
    // and 436,207,616 of absmax), fp32 embedding and head (2 × 525,336,576 × 4), fp32 norms.
    const params = qlora.estimate.categoryPeaks.params;
    const adapters = 41_943_040 * 2;
    const base = 3_489_660_928 + 436_207_616 + 32 * 7 * 64 + 2 * 525_336_576 * 4 + 65 * 4096 * 4;
    assert.equal(params, base + adapters);
    const full = read(
      yaml.replace('use_peft: true\n', '').replace('load_in_4bit: true\n', '').concat('fsdp: full_shard\n'),
    );
    assert.ok(qlora.estimate.peak.total < full.estimate.peak.total / 3);
    // The inverse questions run on the same replay: micro-batches of 2,048 tokens that fit 24 GB.
    const rtx = findGpu('RTX4090-24GB')!.memoryBytes;
    const bf16 = read(`${yaml}bf16: true\nmodel_init_kwargs:\n  dtype: bfloat16\n`);
    const largest = maxMicroBatch(bf16.read.input, rtx);
    assert.ok(largest >= 1, `${largest}`);
    assert.ok(estimateMemory({ ...bf16.read.input, microBatch: largest }).peak.total <= rtx);
    assert.ok(estimateMemory({ ...bf16.read.input, microBatch: largest + 1 }).peak.total > rtx);
    assert.equal(maxMicroBatch(full.read.input, rtx), 0);
    const fsdp = read(`${yaml}fsdp: full_shard\n`);
    assert.deepEqual(
      fsdp.read.input.notModelled?.map((n) => n.what),
      ['LoRA', '4-bit'],
    );
  });

  it('models LoRA under FSDP2 from a TRL config (fsdp_config version 2), and names it under FSDP1, over 4-bit or with modules_to_save', () => {
    const yaml = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
use_peft: true
lora_r: 16
lora_target_modules: all-linear
gradient_checkpointing: true
per_device_train_batch_size: 1
max_length: 2048
num_processes: 8
fsdp: full_shard
`;
    const read = (text: string): ConfigMemory => {
      const m = configMemory('hf-training', text, '/w/sft.yaml');
      assert.ok(!('error' in m), 'error' in m ? m.error : '');
      return m;
    };
    const fsdp2 = read(`${yaml}fsdp_config:\n  version: 2\n`);
    assert.equal(fsdp2.read.input.notModelled, undefined);
    assert.equal(fsdp2.read.input.lora?.r, 16);
    // The optimizer's states are AdamW's two of each rank's 1/8 of the adapters: 41,943,040 fp32 elements.
    assert.equal(fsdp2.estimate.categoryPeaks.optimizer, (2 * 41_943_040 * 4) / 8);
    assert.deepEqual(
      read(yaml).read.input.notModelled?.map((n) => n.what),
      ['LoRA'],
    );
    assert.deepEqual(
      read(`${yaml}fsdp_config:\n  version: 2\nload_in_4bit: true\n`).read.input.notModelled?.map((n) => n.what),
      ['LoRA', '4-bit'],
    );
    assert.deepEqual(
      read(`${yaml}fsdp_config:\n  version: 2\nlora_modules_to_save: [lm_head]\n`).read.input.notModelled?.map(
        (n) => n.what,
      ),
      ['LoRA'],
    );
  });

  it('reads the adapter_config.json inside the model folder a TrainingArguments config trains, and names it under FSDP', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'lora-adapter-'));
    try {
      const model = path.join(dir, 'model');
      mkdirSync(model);
      // SmolLM2-360M's shape (its config.json's keys).
      writeFileSync(
        path.join(model, 'config.json'),
        JSON.stringify({
          model_type: 'llama',
          vocab_size: 49152,
          hidden_size: 960,
          intermediate_size: 2560,
          num_hidden_layers: 32,
          num_attention_heads: 15,
          num_key_value_heads: 5,
          max_position_embeddings: 8192,
          tie_word_embeddings: true,
          hidden_act: 'silu',
          rms_norm_eps: 1e-5,
        }),
      );
      writeFileSync(
        path.join(model, 'adapter_config.json'),
        JSON.stringify({
          peft_type: 'LORA',
          r: 8,
          lora_alpha: 16,
          lora_dropout: 0,
          target_modules: ['q_proj', 'v_proj'],
        }),
      );
      const file = path.join(dir, 'train.yaml');
      const text = `model_name_or_path: ./model\nper_device_train_batch_size: 2\nmax_length: 256\n`;
      // The reader finds model_name_or_path in the file on disk, as the language server's documents are.
      writeFileSync(file, text);
      const m = configMemory('hf-training', text, file, {}, hfModelSource(file));
      assert.ok(!('error' in m), 'error' in m ? m.error : '');
      assert.deepEqual(m.read.input.lora, {
        r: 8,
        alpha: 16,
        dropout: 0,
        targets: ['q_proj', 'v_proj'],
        modulesToSave: [],
        adapterDtype: 'float32',
      });
      // Adapters per block: q 8·(960+960) = 15,360 and v 8·(960+320) = 10,240 → 25,600; × 32 = 819,200
      // fp32 elements: 3,276,800 bytes of gradients at the step, twice that of AdamW states.
      const step = m.estimate.phases.find((p) => p.phase === 'optimizer')!.bytes;
      assert.equal(step.optimizer, 2 * 3_276_800);
      assert.ok(
        m.read.notes.some((n) =>
          n.startsWith(`LoRA from ${path.join(model, 'adapter_config.json')} r 8 on q_proj, v_proj`),
        ),
      );
      const fsdp = configMemory('hf-training', `${text}fsdp: full_shard\n`, file, {}, hfModelSource(file));
      assert.ok(!('error' in fsdp));
      assert.deepEqual(
        fsdp.read.input.notModelled?.map((n) => [n.what, n.key]),
        [['LoRA', `adapter_config.json (${path.join(model, 'adapter_config.json')})`]],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
