// `fsdp-estimate` as a person runs it: a real process on real config files.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';

const root = path.join(__dirname, '..', '..');
const sample = path.join(root, 'samples', 'tiny-cpu.yaml');

function run(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'cli', 'fsdp-estimate.ts'), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('fsdp-estimate (command line)', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-estimate-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints a table by category and phase, with the peak phase and the summary line', () => {
    const r = run(sample);
    assert.equal(r.code, 0, r.err);
    for (const row of ['params', 'grads', 'optimizer', 'activations', 'workspace', 'comm', 'other', 'total'])
      assert.match(r.out, new RegExp(`^${row} +[\\d.]+ +[\\d.]+ +[\\d.]+`, 'm'));
    assert.match(r.out, /← peak: backward/);
    assert.match(r.out, /^≈ [\d.]+ MiB \/ rank \(params [\d.]+ · grads/m);
  });

  it('--json gives bytes per category that sum to the total, the same as the library, and the verdict for --gpu', () => {
    const r = run(sample, '--json', '--gpu', 'H100', '--nproc', '2');
    assert.equal(r.code, 0, r.err);
    const j = JSON.parse(r.out);
    assert.deepEqual(Object.keys(j.bytes), [
      'params',
      'grads',
      'optimizer',
      'activations',
      'workspace',
      'comm',
      'other',
      'total',
    ]);
    const sum = Object.entries(j.bytes)
      .filter(([k]) => k !== 'total')
      .reduce((s, [, v]) => s + (v as number), 0);
    assert.ok(Math.abs(sum - j.bytes.total) <= 7, `categories sum to ${sum}, total ${j.bytes.total}`);
    const read = readConfigForEstimate(readFileSync(sample, 'utf8'), sample, { nproc: 2, gpu: 'H100' });
    assert.ok(!isConfigInputError(read));
    assert.equal(j.bytes.total, Math.round(estimateMemory(read.input).peak.total));
    assert.equal(j.run.nprocPerNode, 2);
    assert.deepEqual([j.fit.gpu, j.fit.fits, j.fit.capacityBytes], ['H100-80GB', true, findGpu('H100')!.memoryBytes]);
    assert.ok(j.maxMicroBatch > 16);
  });

  it('estimates a DeepSpeed config with the model and GPU from the command line, and says when it does not fit', () => {
    const ds = path.join(dir, 'ds_config.json');
    writeFileSync(
      ds,
      JSON.stringify(
        { train_micro_batch_size_per_gpu: 8, bf16: { enabled: true }, zero_optimization: { stage: 2 } },
        null,
        2,
      ),
    );
    const r = run(ds, '--model', 'llama-2-7b', '--gpu', 'L4', '--nproc', '2', '--json');
    assert.equal(r.code, 0, r.err);
    const j = JSON.parse(r.out);
    assert.equal(j.framework, 'deepspeed');
    assert.equal(j.model.params, 6_738_415_616);
    assert.equal(j.fit.fits, false);
    const table = run(ds, '--model', 'llama-2-7b', '--gpu', 'L4', '--nproc', '2');
    assert.match(table.out, /does not fit L4 24GB \([\d.]+ GiB over\)/);
  });

  it('says how many GPUs a config needs when one does not hold it, and that many do', () => {
    const ds = path.join(dir, 'zero3.json');
    writeFileSync(
      ds,
      JSON.stringify({ train_micro_batch_size_per_gpu: 1, bf16: { enabled: true }, zero_optimization: { stage: 3 } }),
    );
    const one = JSON.parse(run(ds, '--model', 'llama-2-7b', '--gpu', 'A100-40GB', '--json').out);
    assert.equal(one.fit.fits, false);
    const n = one.fewestGpus.total as number;
    assert.ok(n > 1);
    assert.equal(
      JSON.parse(run(ds, '--model', 'llama-2-7b', '--gpu', 'A100-40GB', '--nproc', String(n), '--json').out).fit.fits,
      true,
    );
    assert.equal(
      JSON.parse(run(ds, '--model', 'llama-2-7b', '--gpu', 'A100-40GB', '--nproc', String(n / 2), '--json').out).fit
        .fits,
      false,
    );
    assert.match(
      run(ds, '--model', 'llama-2-7b', '--gpu', 'A100-40GB').out,
      new RegExp(`fewest A100 40GB GPUs that fit it \\(FULL_SHARD\\): ${n} `),
    );
  });

  it("--json says where a PyTorch estimate is unsure (far from every GPU measurement), and the verdict is on the range's top", () => {
    const config = path.join(dir, 'accelerate_config.yaml');
    writeFileSync(
      config,
      "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmixed_precision: 'no'\nnum_machines: 1\nnum_processes: 1\n",
    );
    const near = JSON.parse(
      run(config, '--json', '--model', 'gpt2-124m', '--gpu', 'H100', '--seq-len', '1024', '--micro-batch', '4').out,
    );
    assert.equal(near.unsure, undefined);
    const r = run(
      config,
      '--json',
      '--model',
      'gpt2-124m',
      '--gpu',
      'H100',
      '--seq-len',
      '1024',
      '--micro-batch',
      '44',
    );
    assert.equal(r.code, 0, r.err);
    const far = JSON.parse(r.out);
    assert.match(far.unsure.why, /^tokens per micro-batch 45056 is more than 2× outside the measured 512–4096$/);
    assert.ok(far.unsure.low < far.bytes.total && far.bytes.total < far.unsure.high, JSON.stringify(far.unsure));
    assert.deepEqual(
      [far.fit.fits, far.fit.atRangeTop, far.fit.headroomBytes],
      [false, true, far.fit.capacityBytes - far.unsure.high],
    );
  });

  it("estimates the issue's TRL QLoRA config with LoRA and NF4 weights modelled: it fits an H100, nothing named", () => {
    const file = path.join(dir, 'sft_qlora_one.yaml');
    writeFileSync(
      file,
      '# fsdp-studio: model=llama-3-8b gpu=H100-80GB\nuse_peft: true\nlora_target_modules: all-linear\nload_in_4bit: true\ngradient_checkpointing: true\nper_device_train_batch_size: 4\nmax_length: 2048\n',
    );
    const table = run(file);
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /^≈ [\d.]+ GiB \/ GPU .* — fits H100 80GB$/m);
    assert.match(
      table.out,
      /^note: LoRA r 16 on every linear but the output head; base weights frozen in NF4 \(the rest in float32\), adapters in bfloat16$/m,
    );
    assert.doesNotMatch(table.out, /not modelled|does not fit/);
    const json = JSON.parse(run(file, '--json').out) as { notModelled?: unknown; bytes: { total: number } };
    assert.equal(json.notModelled, undefined);
    assert.ok(json.bytes.total < 48 * 2 ** 30, String(json.bytes.total));
  });

  it('names what a TRL QLoRA config under DeepSpeed sets but the estimate leaves out, in the table and in --json, and gives no sure "do not fit"', () => {
    // LoRA is replayed for one process and DDP; under DeepSpeed (here ZeRO stage 0) it is named, not modelled.
    const file = path.join(dir, 'sft_qlora.yaml');
    writeFileSync(
      file,
      '# fsdp-studio: model=llama-3-8b gpu=H100-80GB\nuse_peft: true\nlora_target_modules: all-linear\nload_in_4bit: true\ngradient_checkpointing: true\nper_device_train_batch_size: 4\nmax_length: 2048\ndeepspeed:\n  zero_optimization:\n    stage: 0\n',
    );
    const table = run(file);
    assert.equal(table.code, 0, table.err);
    assert.match(
      table.out,
      /an upper bound: not modelled, each lowering memory: LoRA \(use_peft: true\), 4-bit \(load_in_4bit: true\) — may not fit H100 80GB/,
    );
    assert.match(
      table.out,
      /^by this estimate \(see what it leaves out above\), more H100 80GB GPUs do not make it fit with NO_SHARD$/m,
    );
    assert.match(
      table.out,
      /^by this estimate \(see what it leaves out above\), not even micro-batch 1 fits H100 80GB$/m,
    );
    assert.doesNotMatch(table.out, /does not fit/);
    const json = run(file, '--json');
    assert.equal(json.code, 0, json.err);
    const out = JSON.parse(json.out) as { notModelled?: { bound: string; settings: { key: string }[] } };
    assert.deepEqual(
      [out.notModelled?.bound, out.notModelled?.settings.map((s) => s.key)],
      ['upper', ['use_peft: true', 'load_in_4bit: true']],
    );
  });

  it('a bad config exits 2 with file, line and key; a bad flag exits 2 with usage', () => {
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, readFileSync(sample, 'utf8').replace('n_heads: 4', 'n_heads: many'));
    const r = run(bad);
    assert.equal(r.code, 2);
    assert.match(r.err, /bad\.yaml:\d+:\d+ model\.n_heads: /);
    const flag = run(sample, '--gpu', 'tpu');
    assert.equal(flag.code, 2);
    assert.match(flag.err, /--gpu: "tpu" is not a GPU preset/);
    assert.match(run(sample, '--gpu', '0GiB').err, /--gpu: a GPU of 0GiB cannot hold a training run/);
    assert.match(run(sample, '--seq-len', '1000000000000').err, /--seq-len: expected an integer from 1 to 10,000,000/);
  });

  it('refuses a run config whose d_model is not divisible by n_heads, at the key', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-estimate-heads-'));
    try {
      const file = path.join(dir, 'heads.yaml');
      writeFileSync(file, readFileSync(sample, 'utf8').replace('n_heads: 4', 'n_heads: 3'));
      const r = run(file);
      assert.equal(r.code, 2);
      assert.match(r.err, /heads\.yaml:\d+:\d+ model\.n_heads: /);
      assert.equal(r.out, '', 'no numbers for a model that cannot be built');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps the table's columns apart however large the numbers", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-estimate-wide-'));
    try {
      const file = path.join(dir, 'ds_config.json');
      writeFileSync(
        file,
        '{"train_micro_batch_size_per_gpu": 4096, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}}\n',
      );
      const r = run(file, '--model', 'llama-3-70b', '--seq-len', '1000000', '--gpu', 'H100');
      assert.equal(r.code, 0, r.err);
      const rows = r.out.split('\n').filter((l) => /^(params|activations|total)\s/.test(l));
      assert.equal(rows.length, 3);
      for (const row of rows)
        assert.equal(row.trim().split(/\s+/).length, row.startsWith('total') ? 7 : 4, `columns run together: ${row}`);
      assert.match(r.out, /per GPU, TiB/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
