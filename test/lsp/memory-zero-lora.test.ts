// ZeRO over a LoRA model through the real language server (issue 36): a TRL config that names its DeepSpeed
// file beside it gets an estimate with LoRA modelled under the file's ZeRO stage, shown as a range (not
// measured on a GPU), where it used to be full fine-tuning with LoRA named as not modelled.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LanguageServerClient } from './harness/language-server-client';

const TRL = `# fsdp-studio: model=llama-3-8b gpu=H100-80GB
model_name_or_path: meta-llama/Meta-Llama-3-8B
output_dir: out
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

describe('language server over stdio: ZeRO over a LoRA model', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;
  let dir = '';
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-lsp-zero-lora-'));
    server = await LanguageServerClient.start({ settings: {} });
  });
  afterEach(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('estimates a TRL LoRA config with the ZeRO stage of its ds_config.json, as a range, and names nothing', async () => {
    writeFileSync(
      path.join(dir, 'ds_config.json'),
      JSON.stringify({ bf16: { enabled: 'auto' }, zero_optimization: { stage: 3, reduce_bucket_size: 'auto' } }),
    );
    const uri = pathToFileURL(path.join(dir, 'sft.yaml')).href;
    await server.open(uri, TRL);
    const [lens] = await server.codeLenses(uri);
    const title = lens.command!.title;
    // Unsure: the verdict is on the range's top ("up to"), and nothing is named as not modelled.
    assert.match(title, /^≈ [\d.]+ GiB \/ GPU \(up to [\d.]+ GiB\) — fits H100 80GB — Llama 3 8B$/);
    assert.doesNotMatch(title, /not modelled/);
    const tooltip = lens.command!.tooltip ?? '';
    assert.match(tooltip, /unsure, [\d.]+–[\d.]+ GiB \(ZeRO over a LoRA model is not measured on a GPU\)/);
    // ZeRO 3 partitions the frozen base too: half of Llama 3 8B's 15.0 GiB in bf16 on each of the 2 ranks, and
    // Adam's fp32 master and states for half of the 41,943,040 adapter elements (0.2 GiB), not of 8 B parameters.
    assert.match(tooltip, /\(params 7\.5 · grads 0\.0 · optim 0\.2 · /);
    // Stage 3 keeps half of the 16 GB bf16 base a rank; full fine-tuning of the same config would step 8 B parameters.
    const gib = Number(/^≈ ([\d.]+) GiB/.exec(title)![1]);
    assert.ok(gib > 15 && gib < 40, title);
    // Stage 2 of the same file: the frozen base whole on each rank, about 7 GiB more.
    writeFileSync(
      path.join(dir, 'ds_config.json'),
      JSON.stringify({ bf16: { enabled: 'auto' }, zero_optimization: { stage: 2 } }),
    );
    await server.change(uri, `${TRL}\n`);
    const stage2 = (await server.codeLenses(uri))[0].command!.title;
    const gib2 = Number(/^≈ ([\d.]+) GiB/.exec(stage2)![1]);
    assert.ok(gib2 - gib > 6, `${title} → ${stage2}`);
    assert.match((await server.codeLenses(uri))[0].command!.tooltip ?? '', /\(params 15\.0 · /);
  });
});
