// "Apply": a change written back into the config at the exact range, the rest untouched.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setConfigValue } from '../../core/config/config-edits';
import { changeEdit } from '../../core/memory/apply-change';
import { estimateMemory } from '../../core/memory/estimate';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';

const sample = readFileSync(path.join(__dirname, '..', '..', 'samples', 'tiny-cpu.yaml'), 'utf8');

function applied(text: string, fileName: string, change: Parameters<typeof changeEdit>[2]): string {
  const r = changeEdit(text, fileName, change);
  if ('error' in r) assert.fail(r.error);
  return r.text;
}

describe('apply a memory change to a config', () => {
  it('replaces the micro-batch value in place: one edit on one line, nothing else changes', () => {
    const r = changeEdit(sample, 'tiny-cpu.yaml', { knob: 'microBatch', value: 4 });
    if ('error' in r) assert.fail(r.error);
    const line = sample.split('\n').findIndex((l) => l.includes('batch_size_per_gpu'));
    assert.deepEqual(r.edit, { range: { start: { line, character: 22 }, end: { line, character: 24 } }, newText: '4' });
    assert.equal(r.text, sample.replace('batch_size_per_gpu: 16', 'batch_size_per_gpu: 4'));
  });

  it('adds a missing section with its keys at the end, indented as the file is', () => {
    const text = applied(sample, 'tiny-cpu.yaml', { knob: 'checkpointing', value: { policy: 'every_n', everyN: 2 } });
    assert.ok(text.startsWith(sample.trimEnd()));
    assert.match(
      text,
      /\nactivation_checkpointing:\n {2}enabled: true\n {2}policy: every_n\n {2}every_n_layers: 2\n?$/,
    );
    const r = readConfigForEstimate(text, 'tiny-cpu.yaml');
    assert.ok(!isConfigInputError(r));
    assert.deepEqual(r.input.checkpointing, { policy: 'every_n', everyN: 2 });
  });

  it('adds a key to an existing section after its last key, keeping comments', () => {
    const text = applied(sample, 'tiny-cpu.yaml', { knob: 'offload', value: true });
    assert.ok(text.includes('fsdp:\n  sharding_strategy: NO_SHARD\n  cpu_offload: true\n'));
    assert.ok(text.startsWith('# A small GPT'));
  });

  it('the applied change is what the estimate then sees', () => {
    const text = applied(sample, 'tiny-cpu.yaml', { knob: 'strategy', value: 'FULL_SHARD' });
    const r = readConfigForEstimate(text, 'tiny-cpu.yaml');
    assert.ok(!isConfigInputError(r));
    assert.equal(estimateMemory(r.input).input.strategy, 'FULL_SHARD');
  });

  it('edits DeepSpeed JSON with comments, keeping train_batch_size consistent', () => {
    const ds =
      '{\n  // batch\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": { "stage": 2 }\n}\n';
    const text = applied(ds, 'ds_config.json', { knob: 'microBatch', value: 2 });
    assert.equal(
      text,
      ds
        .replace('"train_batch_size": 32', '"train_batch_size": 16')
        .replace('"train_micro_batch_size_per_gpu": 4', '"train_micro_batch_size_per_gpu": 2'),
    );
    const stage = applied(ds, 'ds_config.json', { knob: 'strategy', value: 'FULL_SHARD' });
    assert.ok(stage.includes('"stage": 3'));
  });

  it('writes what a DeepSpeed config cannot say into its fsdp-studio comment', () => {
    const ds = '{\n  "train_micro_batch_size_per_gpu": 4\n}\n';
    assert.equal(applied(ds, 'ds.json', { knob: 'gpu', value: 'A100-80GB' }), `// fsdp-studio: gpu=A100-80GB\n${ds}`);
  });

  it('refuses what a config cannot express, saying why', () => {
    const r = changeEdit('{"train_micro_batch_size_per_gpu": 1}', 'ds.json', {
      knob: 'strategy',
      value: 'HYBRID_SHARD',
    });
    assert.deepEqual(r, { error: 'DeepSpeed has no HYBRID_SHARD' });
  });

  it('removes a key with its line, and refuses flow mappings', () => {
    assert.equal(
      setConfigValue('fsdp:\n  zero_stage: 3\n  cpu_offload: true\n', 'a.yaml', ['fsdp', 'zero_stage'], undefined),
      'fsdp:\n  cpu_offload: true\n',
    );
    assert.deepEqual(
      setConfigValue('fsdp: {cpu_offload: true}\n', 'a.yaml', ['fsdp', 'sharding_strategy'], 'FULL_SHARD'),
      { error: 'fsdp is a flow mapping ({…}); edit it by hand' },
    );
  });
});
