import assert from 'node:assert/strict';
import { hfTrainingSchema } from '../../core/config/hf-training-config';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import { configMemory, type ConfigMemory } from '../../core/memory/config-memory';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { findModelPreset } from '../../core/memory/model-presets';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import { notModelledBound, shortLine, summaryLine, verdictText } from '../../core/memory/summary';

// The QLoRA run (issue 36): people train it on one 24 GB card. The estimate models LoRA and
// 4-bit weights in one process (test/unit/memory-lora.test.ts); under FSDP it still models full
// fine-tuning, and names them.
const QLORA = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
model_name_or_path: meta-llama/Meta-Llama-3-8B
use_peft: true
lora_r: 16
lora_target_modules: all-linear
load_in_4bit: true
gradient_checkpointing: true
per_device_train_batch_size: 4
max_length: 2048
`;

const FSDP_QLORA = `${QLORA}fsdp: full_shard\n`;

function hf(text: string): ConfigMemory {
  const m = configMemory('hf-training', text, '/w/sft.yaml');
  assert.ok(!('error' in m), 'error' in m ? m.error : '');
  return m;
}

describe('an estimate that leaves out what the config sets is never shown as a confident figure', () => {
  it('models LoRA and 4-bit weights of a one-GPU TRL QLoRA config: nothing named, no 192 GiB "does not fit"', () => {
    const m = hf(QLORA);
    assert.equal(m.read.input.notModelled, undefined);
    assert.equal(m.read.input.lora?.r, 16);
    assert.equal(m.read.input.weights?.quant?.kind, 'nf4');
    assert.match(m.title, /^≈ [\d.]+ GiB \/ GPU .* — fits H100 80GB/);
    assert.ok(m.estimate.peak.total < 48 * 2 ** 30, `${m.estimate.peak.total / 2 ** 30} GiB`);
  });

  it('names LoRA and 4-bit on the inline hint of a TRL QLoRA config under FSDP and gives its figure as an upper bound', () => {
    const m = hf(FSDP_QLORA);
    assert.deepEqual(
      m.read.input.notModelled?.map((n) => n.key),
      ['use_peft: true', 'load_in_4bit: true'],
    );
    assert.match(m.title, /^≤ [\d.]+ GiB \/ GPU \(unsure: LoRA, 4-bit not modelled\) — may not fit H100 80GB/);
    assert.doesNotMatch(m.title, /does not fit/);
  });

  it('names each setting left out with its key in the hover, and does not warn as if the run could not fit', () => {
    const m = hf(FSDP_QLORA);
    assert.match(
      m.detail,
      /an upper bound: not modelled, each lowering memory: LoRA \(use_peft: true\), 4-bit \(load_in_4bit: true\)/,
    );
    assert.equal(m.problem?.code, 'memory.does-not-fit');
    assert.equal(m.problem?.severity, 'information');
    assert.match(m.problem!.message, /^may need up to [\d.]+ GiB \(an upper bound: LoRA \(use_peft: true\), 4-bit/);
  });

  it('keeps the estimate, its verdict and its warning as they were for a full fine-tuning config', () => {
    const fsdpFull = FSDP_QLORA.replace('use_peft: true\n', '').replace('load_in_4bit: true\n', '');
    const full = hf(fsdpFull);
    assert.equal(full.read.input.notModelled, undefined);
    assert.match(full.title, /^≈ .* — does not fit H100 80GB/);
    assert.equal(full.problem?.severity, 'warning');
    // Under FSDP, leaving LoRA out changes no byte of the estimate: only its words.
    assert.equal(full.estimate.peak.total, hf(FSDP_QLORA).estimate.peak.total);
  });

  it('names 8-bit and paged optimizers, Liger and activation offloading, each as lowering memory; models bf16 weights', () => {
    const m = hf(
      `${QLORA.replace('use_peft: true\n', '').replace('load_in_4bit: true\n', '')}model_init_kwargs:\n  dtype: bfloat16\noptim: paged_adamw_8bit\nuse_liger_kernel: true\nactivation_offloading: true\n`,
    );
    assert.deepEqual(
      m.read.input.notModelled?.map((n) => [n.what, n.effect]),
      [
        ['paged_adamw_8bit', 'lowers'],
        ['Liger kernels', 'lowers'],
        ['activation offloading', 'lowers'],
      ],
    );
    assert.equal(m.read.input.weights?.dtype, 'bfloat16');
    assert.match(m.title, /\(unsure: paged_adamw_8bit, Liger kernels, activation offloading not modelled\)/);
    // Four names do not fit the hint: two, and how many more (the hover has all).
    const four = hf(
      `${QLORA.replace('use_peft: true\n', '').replace('load_in_4bit: true\n', '')}optim: paged_adamw_8bit\nuse_liger_kernel: true\nactivation_offloading: true\ntorch_compile: true\n`,
    );
    assert.match(four.title, /unsure: paged_adamw_8bit, Liger kernels, \+2 not modelled\)/);
  });

  it('leaves the AdamW variants the estimate models, and fp32 weights, unnamed', () => {
    const m = hf(
      `${QLORA.replace('use_peft: true\n', '').replace('load_in_4bit: true\n', '')}optim: adamw_torch_fused\ndtype: float32\n`,
    );
    assert.equal(m.read.input.notModelled, undefined);
  });

  it('says a setting that may raise memory too (torch.compile, ademamix) makes even a "fits" unsure', () => {
    const m = hf(
      `# fsdp-studio: model=llama-3.2-1b gpu=H100-80GB\nper_device_train_batch_size: 1\nmax_length: 512\nbf16: true\ntorch_compile: true\noptim: ademamix\n`,
    );
    assert.equal(notModelledBound(m.read.input), 'unsure');
    assert.equal(m.estimate.fit?.fits, true);
    assert.match(
      m.title,
      /^≈ [\d.]+ GiB \/ GPU \((up to [\d.]+ GiB; )?unsure: ademamix, torch\.compile not modelled\) — may fit H100 80GB/,
    );
  });

  it('gives "fits" as sure where an upper bound fits, and "may not fit" where it does not', () => {
    const base: MemoryInput = {
      ...defaultMemoryInput(findModelPreset('gpt2-124m')!.shape, 1024),
      microBatch: 1,
      notModelled: [{ key: 'use_peft: true', what: 'LoRA', effect: 'lowers' }],
    };
    const roomy = estimateMemory({ ...base, gpu: findGpu('H100-80GB')! });
    assert.equal(verdictText(roomy), 'fits H100 80GB');
    assert.match(summaryLine(roomy), /LoRA \(use_peft: true\)/);
    const tight = estimateMemory({ ...base, gpu: { ...findGpu('H100-80GB')!, memoryBytes: roomy.peak.total / 2 } });
    assert.match(verdictText(tight)!, /^may not fit H100 80GB \(the upper bound is [\d.]+ (GiB|MiB) over\)$/);
    assert.match(shortLine(tight), /^≤ /);
  });

  it('names only keys the TrainingArguments / TRL schema has, so a renamed argument is caught here', () => {
    const keys = Object.keys((hfTrainingSchema as { properties: Record<string, unknown> }).properties);
    const m = hf(
      `${FSDP_QLORA}use_dora: true\nload_in_8bit: true\noptim: adafactor\nuse_liger_kernel: true\nactivation_offloading: true\ntorch_compile: true\nmixed_precision: fp8\n`,
    );
    const named = m.read.input.notModelled!.map((n) => n.key.split(/[.:]/)[0]);
    assert.ok(named.length >= 8, named.join(', '));
    for (const k of named) assert.ok(keys.includes(k), `${k} is not in the TrainingArguments / TRL schema`);
  });

  it('models attn_implementation: eager as attention that keeps its seq × seq scores, rather than naming it', () => {
    const base = `# fsdp-studio: model=llama-3.2-1b gpu=H100-80GB\nper_device_train_batch_size: 1\nmax_length: 2048\nbf16: true\n`;
    const sdpa = hf(`${base}model_init_kwargs:\n  attn_implementation: sdpa\n`);
    const eager = hf(`${base}model_init_kwargs:\n  attn_implementation: eager\n`);
    assert.deepEqual([sdpa.read.input.attention, eager.read.input.attention], ['flash', 'eager']);
    assert.equal(eager.read.input.notModelled, undefined);
    assert.ok(eager.estimate.categoryPeaks.activations > sdpa.estimate.categoryPeaks.activations);
  });

  it("names an accelerate config's FP8 and torch.compile as unsure either way", () => {
    const text = `# fsdp-studio: model=llama-3.2-1b gpu=H100-80GB micro_batch=1 seq_len=1024\ndistributed_type: 'NO'\nmixed_precision: fp8\nnum_processes: 1\ndynamo_config:\n  dynamo_backend: INDUCTOR\n`;
    const m = configMemory('accelerate', text, '/w/accelerate.yaml');
    assert.ok(!('error' in m), 'error' in m ? m.error : '');
    assert.deepEqual(
      m.read.input.notModelled?.map((n) => n.key),
      ['mixed_precision: fp8', 'dynamo_backend: INDUCTOR'],
    );
    assert.match(m.title, /unsure: FP8, torch\.compile not modelled\) — may fit H100 80GB/);
    const plain = configMemory('accelerate', text.replace('fp8', 'bf16').replace('INDUCTOR', 'NO'), '/w/a.yaml');
    assert.ok(!('error' in plain) && plain.read.input.notModelled === undefined);
  });

  it("names a DeepSpeed config's optimizer other than Adam, CPU activation checkpoints and ZeRO++ hpZ; Adam is modelled", () => {
    const ds = (extra: string) =>
      `// fsdp-studio: model=gpt2-355m gpu=L4\n{ "train_micro_batch_size_per_gpu": 2, "bf16": { "enabled": true }, "zero_optimization": { "stage": 3${extra} } }`;
    const m = configMemory(
      'deepspeed',
      ds(
        ', "zero_hpz_partition_size": 8 }, "optimizer": { "type": "OneBitAdam" }, "activation_checkpointing": { "cpu_checkpointing": true',
      ),
      '/w/ds_config.json',
    );
    assert.ok(!('error' in m), 'error' in m ? m.error : '');
    assert.deepEqual(
      m.read.input.notModelled?.map((n) => [n.what, n.effect]),
      [
        ['OneBitAdam', 'either'],
        ['activations on the CPU', 'lowers'],
        ['ZeRO++ hpZ', 'either'],
      ],
    );
    const adam = configMemory('deepspeed', ds(' }, "optimizer": { "type": "AdamW"'), '/w/ds_config.json');
    assert.ok(!('error' in adam) && adam.read.input.notModelled === undefined);
  });

  it('names what the DeepSpeed file a TrainingArguments config points to leaves out, with the file', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-not-modelled-'));
    try {
      writeFileSync(
        path.join(dir, 'ds.json'),
        '{ "zero_optimization": { "stage": 2 }, "optimizer": { "type": "Adagrad" } }',
      );
      const file = path.join(dir, 'sft.yaml');
      const m = configMemory(
        'hf-training',
        `# fsdp-studio: model=llama-3.2-1b gpu=H100-80GB\nper_device_train_batch_size: 1\ndeepspeed: ds.json\n`,
        file,
        {},
        hfModelSource(file),
      );
      assert.ok(!('error' in m), 'error' in m ? m.error : '');
      assert.deepEqual(
        m.read.input.notModelled?.map((n) => n.key),
        ['optimizer.type: Adagrad (in ds.json)'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
