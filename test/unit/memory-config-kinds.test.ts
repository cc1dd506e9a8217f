import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyConfigEdits } from '../../core/config/config-edits';
import { configMemory } from '../../core/memory/config-memory';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';

const FIXTURES = path.resolve(__dirname, '../fixtures');
const read = (f: string) => readFileSync(path.join(FIXTURES, f), 'utf8');

describe('the inline memory estimate of torchtitan and TrainingArguments configs', () => {
  it("estimates torchtitan's Llama 3 70B config per GPU with its degrees and flavour", () => {
    const text = `# fsdp-studio: nproc=8 nnodes=8 gpu=H100-80GB\n${read('torchtitan/llama3-llama3_70b.toml')}`;
    const m = configMemory('torchtitan', text, '/w/llama3_70b.toml');
    assert.ok(!('error' in m), 'error' in m ? m.error : '');
    assert.match(
      m.detail,
      /^≈ [\d.]+ GiB \/ GPU .* — fits H100 80GB — for Llama 3 70B \(70\.55 B parameters, torchtitan llama3\/70B\) \(torchtitan 0\.2\.2 TOML\)$/,
    );
    const plan = m.read.input.parallel!;
    assert.deepEqual([plan.shard, plan.tp, plan.pp, plan.cp], [8, 8, 1, 1]);
    assert.equal(m.read.input.checkpointing.policy, 'every_n', 'mode = "full"');
    assert.equal(m.read.anchor.start.line, text.split('\n').indexOf('[parallelism]'), 'the line above [parallelism]');
  });

  it('says when a torchtitan config does not fit, with the split of the same GPUs that does as a quick fix on the TOML', () => {
    // torchtitan's 70B config without its 8-way tensor parallel: 64-way FSDP keeps every layer's input of 8 × 8192 tokens.
    const text = `# fsdp-studio: nproc=8 nnodes=8 gpu=H100-80GB\n${read('torchtitan/llama3-llama3_70b.toml').replace('tensor_parallel_degree = 8', 'tensor_parallel_degree = 1')}`;
    const m = configMemory('torchtitan', text, '/w/llama3_70b.toml');
    assert.ok(!('error' in m));
    assert.equal(m.problem?.code, 'memory.does-not-fit');
    const fix = m.problem!.fixes!.find((f) =>
      f.edits.some((e) => e.path.join('.') === 'parallelism.tensor_parallel_degree'),
    );
    assert.ok(fix, m.problem!.fixes!.map((f) => f.title).join(' | '));
    const fixed = applyConfigEdits(text, fix.edits, { kind: 'toml' });
    const after = configMemory('torchtitan', fixed, '/w/llama3_70b.toml');
    assert.ok(
      !('error' in after) && after.estimate.fit!.fits,
      `${fix.title}: ${'error' in after ? after.error : after.title}`,
    );
  });

  it('says how many GPUs a torchtitan config needs when no split of its GPUs holds it (405B on 64)', () => {
    const text = `# fsdp-studio: nproc=8 nnodes=8 gpu=H100-80GB\n${read('torchtitan/llama3-llama3_405b.toml')}`;
    const m = configMemory('torchtitan', text, '/w/llama3_405b.toml');
    assert.ok(!('error' in m));
    // 16 bytes of weights, gradients and AdamW state per parameter over 64 GPUs is 101 GB already.
    assert.match(m.problem!.message, /(128|256) GPUs would hold it \(dp /);
  });

  it('names the flavours it knows when a config names another model', () => {
    const r = readConfigForEstimate(read('torchtitan/qwen3-qwen3_32b.toml'), '/w/qwen3_32b.toml', {}, 'torchtitan');
    assert.ok('error' in r);
    assert.match(r.error, /qwen3 flavour 32B is not one the estimator knows \(llama3\/debugmodel, llama3\/8B/);
    const named = readConfigForEstimate(
      `# fsdp-studio: model=llama-3-8b\n${read('torchtitan/qwen3-qwen3_32b.toml')}`,
      '/w/qwen3_32b.toml',
      {},
      'torchtitan',
    );
    assert.ok(!('error' in named), 'error' in named ? named.error : '');
  });

  it('estimates TrainingArguments from the arguments: micro-batch, bf16, FSDP through fsdp: true', () => {
    const text = `# fsdp-studio: model=llama-3.2-1b gpu=A100-40GB\n${read('hf-training/trl-example_config.yaml')}per_device_train_batch_size: 4\nbf16: true\nfsdp: true\nfsdp_config:\n  reshard_after_forward: false\nnum_processes: 4\n`;
    const m = configMemory('hf-training', text, '/w/sft.yaml');
    assert.ok(!('error' in m), 'error' in m ? m.error : '');
    const i = m.read.input;
    assert.deepEqual(
      [i.microBatch, i.precision.param, i.strategy, i.nprocPerNode, i.framework],
      [4, 'bfloat16', 'SHARD_GRAD_OP', 4, 'pytorch'],
    );
    assert.match(m.title, / — Llama 3\.2 1B$/);
    assert.match(m.detail, /for Llama 3\.2 1B/);
  });

  it("follows TrainingArguments' deepspeed: to the DeepSpeed file for the ZeRO stage and offload, its name only when unreadable", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-hf-ds-'));
    try {
      const file = path.join(dir, 'sft.yaml');
      const base = `# fsdp-studio: model=llama-3.2-1b gpu=A100-40GB\n${read('hf-training/trl-example_config.yaml')}bf16: true\nnum_processes: 4\n`;
      const estimate = (ds: string) => {
        const m = configMemory('hf-training', `${base}deepspeed: ${ds}\n`, file, {}, hfModelSource(file));
        assert.ok(!('error' in m), 'error' in m ? m.error : '');
        return m.read;
      };
      // The file's own stage wins over what its name suggests.
      writeFileSync(
        path.join(dir, 'ds_zero3.json'),
        JSON.stringify({ zero_optimization: { stage: 1, offload_optimizer: { device: 'cpu' } } }),
      );
      const one = estimate('ds_zero3.json');
      assert.deepEqual(
        [one.input.framework, one.input.strategy, one.input.offload],
        ['deepspeed', 'SHARD_OPTIMIZER', { optimizer: true, params: false }],
      );
      assert.ok(
        one.notes.includes('DeepSpeed ZeRO stage 1, offload of optimizer from ds_zero3.json'),
        one.notes.join('; '),
      );
      writeFileSync(
        path.join(dir, 'ds.json'),
        JSON.stringify({ zero_optimization: { stage: 3, offload_param: { device: 'nvme' } } }),
      );
      assert.deepEqual(estimate('ds.json').input.offload, { optimizer: false, params: true });
      assert.equal(estimate('ds.json').input.strategy, 'FULL_SHARD');
      // No zero_optimization: DeepSpeed's stage 0.
      writeFileSync(path.join(dir, 'plain.json'), '{"train_micro_batch_size_per_gpu": "auto"}');
      assert.equal(estimate('plain.json').input.strategy, 'NO_SHARD');
      // Not there, or "auto": the name is all there is, and the note says so.
      const missing = estimate('zero3_offload.json');
      assert.equal(missing.input.strategy, 'FULL_SHARD');
      assert.ok(
        missing.notes.some((n) =>
          /stage 3 guessed from the name zero3_offload\.json: the file is not readable here/.test(n),
        ),
        missing.notes.join('; '),
      );
      writeFileSync(path.join(dir, 'auto.json'), '{"zero_optimization": {"stage": "auto"}}');
      assert.ok(estimate('auto.json').notes.some((n) => /does not say its stage as a number/.test(n)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
