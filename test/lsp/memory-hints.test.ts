// The memory estimate inline, through the real language server over stdio: a CodeLens on every
// recognised config, updated as the text changes; a warning with quick fixes when it does not fit.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Diagnostic } from 'vscode-languageserver-protocol';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';
import { applyTextEdits } from './harness/marked-text';

const sample = readFileSync(path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), 'utf8');
const DS = `// fsdp-studio: model=gpt2-355m gpu=L4
{
  "train_micro_batch_size_per_gpu": 16,
  "bf16": { "enabled": true },
  "zero_optimization": { "stage": 0 }
}
`;

const memoryWarnings = (ds: Diagnostic[]) => ds.filter((d) => d.code === 'memory.does-not-fit');

describe('language server over stdio: memory estimate inline', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;
  beforeEach(async () => {
    server = await LanguageServerClient.start({ settings: {} });
  });
  afterEach(async () => server.stop());

  // The sample itself: the runtime's own check (through the addon) wants its data files to exist.
  const sampleUri = pathToFileURL(path.join(repoRoot, 'samples', 'tiny-cpu.yaml')).href;

  it("puts a CodeLens with the estimate on a run config's model section; it opens the panel", async () => {
    const uri = sampleUri;
    assert.deepEqual(await server.open(uri, sample), []);
    const lenses = await server.codeLenses(uri);
    assert.equal(lenses.length, 1);
    const modelLine = sample.split('\n').findIndex((l) => l.startsWith('model:'));
    assert.deepEqual(lenses[0].range, {
      start: { line: modelLine, character: 0 },
      end: { line: modelLine, character: 5 },
    });
    // samples/tiny-cpu.yaml's plan, native/MEMORY.md's worked example: backward 116 445 184 B = 111.1 MiB.
    // The hint fits the editor; the breakdown is its tooltip.
    assert.equal(lenses[0].command!.title, "≈ 111.1 MiB / rank — fits this machine's memory / 1 rank");
    assert.match(
      lenses[0].command!.tooltip ?? '',
      /^≈ 111\.1 MiB \/ rank \(params 3\.2 · grads 3\.2 · optim 6\.4 · act 84\.1 · other 14\.0\) — fits this machine's memory \/ 1 rank\n/,
    );
    assert.deepEqual([lenses[0].command!.command, lenses[0].command!.arguments], ['fsdp.openMemoryEstimator', [uri]]);
  });

  it('updates the estimate as the config is edited', async () => {
    const uri = sampleUri;
    await server.open(uri, sample);
    const before = (await server.codeLenses(uri))[0].command!.title;
    await server.change(uri, sample.replace('batch_size_per_gpu: 16', 'batch_size_per_gpu: 64'));
    const after = (await server.codeLenses(uri))[0].command!.title;
    const total = (t: string) => Number(/^≈ ([\d.]+) MiB/.exec(t)![1]);
    assert.ok(total(after) > 3 * total(before), `${before} → ${after}`);
  });

  it('keeps the last good estimate, marked stale, while the config has an error elsewhere', async () => {
    const uri = sampleUri;
    await server.open(uri, sample);
    const good = (await server.codeLenses(uri))[0].command!.title;
    const broken = sample.replace('learning_rate: 0.003', 'learning_rate: fast');
    const diagnostics = await server.change(uri, broken);
    assert.ok(
      diagnostics.some((d) => d.severity === 1),
      'the config has an error',
    );
    const lenses = await server.codeLenses(uri);
    assert.equal(lenses.length, 1);
    assert.equal(lenses[0].command!.title, `(stale: the config has an error) ${good}`);
    await server.change(uri, sample);
    assert.equal((await server.codeLenses(uri))[0].command!.title, good, 'fresh again once fixed');
  });

  it('warns at the micro-batch when a DeepSpeed config does not fit its GPU; the quick fix makes it fit', async () => {
    const uri = 'file:///w/ds_config.json';
    const warnings = memoryWarnings(await server.open(uri, DS));
    assert.equal(warnings.length, 1);
    const w = warnings[0];
    assert.equal(w.severity, 2);
    assert.deepEqual(w.range, { start: { line: 2, character: 2 }, end: { line: 2, character: 34 } });
    assert.match(
      String(w.message),
      /^needs ≈ [\d.]+ GiB per GPU at its peak \(\w+\), [\d.]+ GiB more than L4 24GB has; micro-batch \d+ fits/,
    );
    const lens = (await server.codeLenses(uri))[0].command!.title;
    assert.match(lens, /does not fit L4 24GB/);

    const actions = await server.codeActions(uri, w.range, [w]);
    const preferred = actions.find((a) => a.isPreferred);
    assert.ok(preferred, `no preferred fix among ${actions.map((a) => a.title).join(' | ')}`);
    assert.match(preferred.title, /^Memory: micro-batch \d+ \(≈ [\d.]+ GiB per GPU, fits L4 24GB\)$/);
    const fixed = applyTextEdits(DS, preferred.edit!.changes![uri]);
    assert.ok(fixed.startsWith('// fsdp-studio: model=gpt2-355m gpu=L4\n{\n  "train_micro_batch_size_per_gpu": '));
    assert.deepEqual(memoryWarnings(await server.change(uri, fixed)), []);
    const [fits] = await server.codeLenses(uri);
    assert.match(fits.command!.title, /^≈ [\d.]+ GiB \/ GPU — fits L4 24GB — GPT-2 355M$/);
    assert.match(fits.command!.tooltip ?? '', /— fits L4 24GB — for GPT-2 355M \(354\.8 M parameters, preset\)\n/);
  });

  it('every quick fix it offers makes the warning go away', async () => {
    const uri = 'file:///w/ds_config.json';
    const [w] = memoryWarnings(await server.open(uri, DS));
    const actions = await server.codeActions(uri, w.range, [w]);
    assert.ok(actions.length >= 2, actions.map((a) => a.title).join(' | '));
    for (const a of actions) {
      const fixed = applyTextEdits(DS, a.edit!.changes![uri]);
      assert.deepEqual(memoryWarnings(await server.change(uri, fixed)), [], `after "${a.title}"`);
    }
  });

  it('takes the target from fsdp.estimator.gpu when the config names none', async () => {
    const uri = 'file:///w/ds_config.json';
    const text = DS.replace(' gpu=L4', '');
    await server.open(uri, text);
    assert.doesNotMatch((await server.codeLenses(uri))[0].command!.title, /fits/);
    await server.setSettings({ estimator: { gpu: 'H200' } }, [{ uri, text }]);
    assert.match(
      (await server.codeLenses(uri))[0].command!.tooltip ?? '',
      / — fits H200 141GB — for GPT-2 355M \(354\.8 M parameters, preset\)\n/,
    );
  });

  it('says where a PyTorch estimate is unsure (far from every GPU measurement): the range, why, and a verdict on its top', async () => {
    const accelerate = (
      microBatch: number,
    ) => `# fsdp-studio: model=gpt2-124m gpu=H100 seq_len=1024 micro_batch=${microBatch}
compute_environment: LOCAL_MACHINE
distributed_type: 'NO'
mixed_precision: 'no'
num_machines: 1
num_processes: 1
`;
    const uri = 'file:///w/accelerate_config.yaml';
    // 4 × 1024 tokens a micro-batch was measured on the H100: no range.
    assert.deepEqual(memoryWarnings(await server.open(uri, accelerate(4))), []);
    assert.match(
      (await server.codeLenses(uri))[0].command!.tooltip ?? '',
      /^≈ [\d.]+ GiB \/ GPU \([^)]*\) — fits H100 80GB — for GPT-2 124M/,
    );
    // 44 × 1024 is 11 × the most measured: the estimate fits, the top of its range does not.
    const diagnostics = await server.change(uri, accelerate(44));
    const [unsure] = await server.codeLenses(uri);
    assert.match(
      unsure.command!.title,
      /^≈ [\d.]+ GiB \/ GPU \(up to [\d.]+ GiB\) — may not fit H100 80GB \(the range's top is [\d.]+ GiB over\) — GPT-2 124M$/,
    );
    const title = unsure.command!.tooltip ?? '';
    assert.match(
      title,
      /^≈ ([\d.]+) GiB \/ GPU \([^)]*\) — unsure, ([\d.]+)–([\d.]+) GiB \(tokens per micro-batch 45056 is more than 2× outside the measured 512–4096\) — may not fit H100 80GB \(the range's top is [\d.]+ GiB over\)/,
    );
    const [, mid, low, high] = /≈ ([\d.]+) GiB .* unsure, ([\d.]+)–([\d.]+) GiB/.exec(title)!.map(Number);
    assert.ok(low < mid && mid < 79.2 && high > 79.2, `${low} < ${mid} < capacity < ${high}`);
    const [warning] = memoryWarnings(diagnostics);
    assert.ok(warning, 'a warning: the top of the range does not fit');
    assert.match(
      String(warning.message),
      /^may need up to [\d.]+ GiB \(≈ [\d.]+ GiB; unsure: tokens per micro-batch 45056 is more than 2× outside the measured 512–4096\) per GPU at its peak/,
    );
  });

  it('keeps the estimate of an accelerate config with a typo, as of a ds_config with one: the same figure, not stale', async () => {
    const accelerate = (typo: string) => `# fsdp-studio: model=gpt2-124m gpu=H100 seq_len=1024 micro_batch=4
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: 2
${typo}num_machines: 1
num_processes: 2
`;
    const uri = 'file:///w/accelerate_config.yaml';
    await server.open(uri, accelerate(''));
    const clean = (await server.codeLenses(uri))[0].command!.title;
    assert.match(clean, /^≈ [\d.]+ GiB \/ GPU/);
    const diagnostics = await server.change(uri, accelerate('mixed_precison: bf16\n'));
    const typo = diagnostics.find((d) => d.code === 'schema.unknown-key');
    assert.equal(typo?.severity, 1, 'accelerate refuses an unknown top-level key: an error');
    assert.match(String(typo?.message), /did you mean "mixed_precision"\?/);
    assert.equal((await server.codeLenses(uri))[0].command!.title, clean);
    const ds = 'file:///w/ds_config.json';
    const dsText = (typo: string) => `{"train_micro_batch_size_per_gpu": 4, ${typo}"zero_optimization": {"stage": 2}}`;
    await server.open(ds, dsText(''));
    const dsClean = (await server.codeLenses(ds))[0].command!.title;
    const dsDiagnostics = await server.change(ds, dsText('"gradient_clippin": 1.0, '));
    assert.ok(dsDiagnostics.some((d) => d.code === 'schema.unknown-key'));
    assert.equal((await server.codeLenses(ds))[0].command!.title, dsClean);
  });

  it('shows no estimate for a config with errors, and asks which model when nothing names it', async () => {
    const bad = 'file:///w/bad.fsdp.yaml';
    await server.open(bad, sample.replace('n_heads: 4', 'n_heads: four'));
    assert.deepEqual(await server.codeLenses(bad), []);
    const ds = 'file:///w/ds_config.json';
    // 64 sequences of 1024 tokens on an L4 would not fit any GPT-2: no verdict is given on a stand-in.
    const diagnostics = await server.open(
      ds,
      '// fsdp-studio: gpu=L4\n{"train_micro_batch_size_per_gpu": 64, "zero_optimization": {"stage": 0}}',
    );
    const [lens] = await server.codeLenses(ds);
    assert.equal(lens.command!.title, 'which model? — choose');
    assert.equal(lens.command!.command, 'fsdp.chooseModel');
    assert.match(lens.command!.tooltip ?? '', /nothing names the model/);
    assert.equal(memoryWarnings(diagnostics).length, 0, "no verdict on a stand-in's memory");
  });

  it('an accelerate FSDP config wrapping LlamaDecoderLayer is asked about as a Llama; the choice made is estimated', async () => {
    const uri = 'file:///w/fsdp_llama.yaml';
    const yaml = [
      'compute_environment: LOCAL_MACHINE',
      'distributed_type: FSDP',
      'fsdp_config:',
      '  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer',
      '  fsdp_sharding_strategy: FULL_SHARD',
      'mixed_precision: bf16',
      'num_processes: 8',
      '',
    ].join('\n');
    await server.open(uri, yaml);
    const [ask] = await server.codeLenses(uri);
    assert.equal(ask.command!.title, 'which model? — choose');
    const args = ask.command!.arguments![0] as { uri: string; family?: { name: string; presets: string[] } };
    assert.equal(args.uri, uri);
    assert.equal(args.family?.name, 'Llama');
    assert.ok(args.family?.presets.includes('llama-2-7b'), JSON.stringify(args.family));
    assert.ok(!args.family?.presets.some((p) => p.startsWith('gpt2')));
    assert.match(
      ask.command!.tooltip ?? '',
      /fsdp_config\.fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer says a Llama/,
    );
    // The editor sends the choice it keeps for the file; the estimate is then for that model.
    await server.connection.sendNotification('fsdp/modelChoices', {
      choices: { [uri]: 'meta-llama/Llama-2-7b-hf' },
    });
    const [chosen] = await server.codeLenses(uri);
    assert.match(chosen.command!.title, /^≈ [\d.]+ GiB \/ GPU .* — Llama 2 7B$/);
    assert.match(
      chosen.command!.tooltip ?? '',
      / — for Llama 2 7B \(6\.74 B parameters, preset, named by your choice\)\n/,
    );
    assert.equal(chosen.command!.command, 'fsdp.openMemoryEstimator');
  });

  it('estimates the issue\'s TRL QLoRA config with LoRA and 4-bit weights modelled: no 192.6 GiB, no "does not fit" on 80 GB', async () => {
    // The issue's run (issue 36): people train it on one 24 GB card. It used to read "192.6 GiB …
    // does not fit H100 80GB (121.3 GiB over)", full fine-tuning in fp32.
    const uri = 'file:///w/sft_qlora.yaml';
    const text = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
model_name_or_path: meta-llama/Meta-Llama-3-8B
output_dir: out
use_peft: true
lora_r: 16
lora_target_modules: all-linear
load_in_4bit: true
gradient_checkpointing: true
per_device_train_batch_size: 4
max_length: 2048
`;
    const diagnostics = await server.open(uri, text);
    // PEFT takes "all-linear" as a string, as TRL's examples write it: no error that would hide the estimate.
    assert.deepEqual(
      diagnostics.filter((d) => d.severity === 1),
      [],
    );
    const [lens] = await server.codeLenses(uri);
    const title = lens.command!.title;
    assert.match(title, /^≈ [\d.]+ GiB \/ GPU \(.*\) — fits H100 80GB — Llama 3 8B$/);
    assert.doesNotMatch(title, /192\.6|does not fit|not modelled/);
    const gib = Number(/^≈ ([\d.]+) GiB/.exec(title)![1]);
    // NF4 base (3.7 GiB) and fp32 embedding and head (3.9 GiB), bf16 adapters and their states, 32
    // checkpointed block inputs and the fp32 logits of 8,192 tokens × 128,256: some 30 GiB, not 190.
    assert.ok(gib > 20 && gib < 40, title);
    assert.match(
      lens.command!.tooltip ?? '',
      /unsure, [\d.]+–[\d.]+ GiB \(LoRA \(r 16, NF4 weights\) is not measured on a GPU\)/,
    );
    assert.deepEqual(memoryWarnings(diagnostics), []);
    // On a 24 GB card in bf16 (TRL's dtype: bfloat16), micro-batch 1, it fits.
    await server.change(
      uri,
      text
        .replace('gpu=H100-80GB', 'gpu=RTX4090-24GB')
        .replace('per_device_train_batch_size: 4', 'per_device_train_batch_size: 1')
        .concat('bf16: true\nmodel_init_kwargs:\n  dtype: bfloat16\n'),
    );
    assert.match((await server.codeLenses(uri))[0].command!.title, / — fits RTX 4090 24GB — /);
  });

  it('names what a TRL QLoRA config under FSDP sets but the estimate leaves out, on the lens and in its tooltip, and gives no confident verdict', async () => {
    // LoRA is replayed for one process or DDP; under FSDP the estimate stays full fine-tuning and says so.
    const uri = 'file:///w/sft_qlora_fsdp.yaml';
    const text = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
model_name_or_path: meta-llama/Meta-Llama-3-8B
output_dir: out
use_peft: true
lora_r: 16
lora_target_modules: all-linear
load_in_4bit: true
gradient_checkpointing: true
per_device_train_batch_size: 4
max_length: 2048
fsdp: full_shard
`;
    const diagnostics = await server.open(uri, text);
    const [lens] = await server.codeLenses(uri);
    assert.match(
      lens.command!.title,
      /^≤ [\d.]+ GiB \/ GPU \(unsure: LoRA, 4-bit not modelled\) — may not fit H100 80GB \(the upper bound is [\d.]+ GiB over\) — Llama 3 8B$/,
    );
    assert.match(
      lens.command!.tooltip ?? '',
      / — an upper bound: not modelled, each lowering memory: LoRA \(use_peft: true\), 4-bit \(load_in_4bit: true\) — /,
    );
    // Not a warning: the run may well fit; the information still says by how much the bound is over.
    const [fit] = memoryWarnings(diagnostics);
    assert.equal(fit?.severity, 3, JSON.stringify(fit));
    assert.match(String(fit.message), /^may need up to [\d.]+ GiB \(an upper bound: LoRA \(use_peft: true\)/);
    // Without LoRA and 4-bit, the same config is the full fine-tuning the estimate models: a confident verdict.
    const full = await server.change(uri, text.replace('use_peft: true\n', '').replace('load_in_4bit: true\n', ''));
    assert.match((await server.codeLenses(uri))[0].command!.title, /^≈ .* — does not fit H100 80GB/);
    assert.equal(memoryWarnings(full)[0]?.severity, 2);
  });
});
