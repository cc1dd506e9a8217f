import assert from 'node:assert/strict';
import type { CompletionItem, MarkupContent } from 'vscode-languageserver-protocol';
import { LanguageServerClient } from './harness/language-server-client';

const RUN = `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: data/train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
fsdp:
  cpu_offload: false
  
`;

const labels = (items: CompletionItem[]) => items.map((i) => i.label);
const docOf = (i: CompletionItem) => (i.documentation as MarkupContent | undefined)?.value ?? '';

describe('language server over stdio: completion and hover', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;

  before(async () => {
    server = await LanguageServerClient.start();
  });
  after(async () => {
    await server?.stop();
  });

  it('completes the keys a run config section does not have yet, with their documentation', async () => {
    const uri = 'file:///work/a.fsdp.yaml';
    await server.open(uri, RUN);
    const items = await server.completion(uri, { line: 5, character: 2 });
    assert.ok(labels(items).includes('sharding_strategy'), labels(items).join(' '));
    assert.ok(!labels(items).includes('cpu_offload'), 'a key already present is not offered again');
    assert.ok(!labels(items).includes('d_model'), 'keys of other sections are not offered');
    const strategy = items.find((i) => i.label === 'sharding_strategy')!;
    assert.match(docOf(strategy), /FULL_SHARD: ZeRO-3/);
    assert.match(docOf(strategy), /Default: `"FULL_SHARD"`/);
    assert.equal(
      strategy.textEdit && 'newText' in strategy.textEdit ? strategy.textEdit.newText : '',
      'sharding_strategy: ',
    );
  });

  it('completes enum values with the default marked', async () => {
    const uri = 'file:///work/b.fsdp.yaml';
    const text = RUN.replace('  cpu_offload: false\n', '  sharding_strategy: \n');
    await server.open(uri, text);
    const items = await server.completion(uri, { line: 4, character: 21 });
    assert.deepEqual(labels(items), ['NO_SHARD', 'SHARD_OPTIMIZER', 'SHARD_GRAD_OP', 'FULL_SHARD', 'HYBRID_SHARD']);
    assert.equal(items.find((i) => i.label === 'FULL_SHARD')!.detail, 'default');
  });

  it('completes DeepSpeed keys inside a quoted key and values as JSON, offering "auto" where Hugging Face fills it in', async () => {
    const uri = 'file:///work/ds_config.json';
    const text = '{\n  "train_batch_size": 16,\n  "zero_optimization": {"sta": 1}\n}\n';
    await server.open(uri, text);
    const keys = await server.completion(uri, { line: 2, character: 27 });
    const stage = keys.find((i) => i.label === 'stage');
    assert.ok(stage, labels(keys).join(' '));
    assert.equal(
      stage.textEdit && 'newText' in stage.textEdit ? stage.textEdit.newText : '',
      'stage',
      'inside quotes only the name is inserted',
    );
    const values = await server.completion(uri, { line: 1, character: 23 });
    assert.ok(labels(values).includes('"auto"'), labels(values).join(' '));
    await server.change(uri, '{\n  "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}\n}\n');
    const devices = await server.completion(uri, { line: 1, character: 70 });
    assert.deepEqual(
      labels(devices),
      ['"none"', '"cpu"', '"nvme"', '"auto"'],
      'accelerate fills the offload device in',
    );
  });

  it('completes accelerate values as PyYAML reads them: "no" quoted', async () => {
    const uri = 'file:///work/accelerate_config.yaml';
    await server.open(uri, 'distributed_type: FSDP\nmixed_precision: \n');
    const items = await server.completion(uri, { line: 1, character: 17 });
    assert.ok(labels(items).includes('"no"'), labels(items).join(' '));
    assert.ok(labels(items).includes('bf16'));
  });

  it('hovers a key with its description, allowed values and default', async () => {
    const uri = 'file:///work/ds_hover.json';
    await server.open(uri, '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}');
    const hover = await server.hover(uri, { line: 0, character: 62 });
    const text = (hover?.contents as MarkupContent).value;
    assert.match(text, /\*\*zero_optimization\.stage\*\*/);
    assert.match(text, /Allowed: one of 0, 1, 2, 3/);
    assert.match(text, /Default: `0`/);
  });

  it('hovers a problem with the rule behind it and its source', async () => {
    const uri = 'file:///work/ds_rule.json';
    const diagnostics = await server.open(
      uri,
      '{"train_micro_batch_size_per_gpu": 1, "gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}',
    );
    const d = diagnostics.find((x) => x.code === 'deepspeed.allreduce-sum-stage3');
    assert.ok(d);
    const hover = await server.hover(uri, { line: 0, character: d.range.start.character + 2 });
    const text = (hover?.contents as MarkupContent).value;
    assert.match(text, /reduce-scatters averaged gradients/);
    assert.match(text, /Source: deepspeed\/runtime\/config\.py: DeepSpeedConfig\._do_error_check/);
  });

  it('offers nothing in files that are not configs', async () => {
    const uri = 'file:///work/package.json';
    const diagnostics = await server.open(uri, '{"name": "x", "version": "1.0.0", "zero_optimizaton": 1}');
    assert.deepEqual(diagnostics, []);
    assert.deepEqual(await server.completion(uri, { line: 0, character: 2 }), []);
    assert.equal(await server.hover(uri, { line: 0, character: 3 }), null);
  });
});
