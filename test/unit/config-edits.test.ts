import assert from 'node:assert/strict';
import { applyConfigEdits, type ConfigEdit } from '../../core/config/config-edits';

const yaml = (text: string, ...edits: ConfigEdit[]) => applyConfigEdits(text, edits, { kind: 'yaml' });
const json = (text: string, ...edits: ConfigEdit[]) => applyConfigEdits(text, edits, { kind: 'json' });

describe('config edits (what quick fixes write)', () => {
  const block =
    '# run\nfsdp:\n  sharding_strategy: FULL_SHRAD   # typo\n  cpu_offload: true\ntraining: {max_steps: 10, seed: 1}\n';

  it('replaces a YAML value in place, keeping its comment', () => {
    assert.equal(
      yaml(block, { kind: 'set', path: ['fsdp', 'sharding_strategy'], value: 'FULL_SHARD' }),
      block.replace('FULL_SHRAD', 'FULL_SHARD'),
    );
  });

  it('adds a key after the last key of a block mapping, a whole section at the end, and into a flow mapping', () => {
    assert.equal(
      yaml(block, { kind: 'set', path: ['fsdp', 'forward_prefetch'], value: true }),
      block.replace('cpu_offload: true\n', 'cpu_offload: true\n  forward_prefetch: true\n'),
    );
    assert.equal(
      yaml(block, { kind: 'set', path: ['mixed_precision', 'loss_scale', 'dynamic'], value: true }),
      `${block}mixed_precision:\n  loss_scale:\n    dynamic: true\n`,
    );
    assert.equal(
      yaml(block, { kind: 'set', path: ['training', 'schedule'], value: 'wsd' }),
      block.replace('seed: 1}', 'seed: 1, schedule: wsd}'),
    );
    assert.equal(yaml('a:\nb: 1\n', { kind: 'set', path: ['a', 'x'], value: 2 }), 'a:\n  x: 2\nb: 1\n');
  });

  it('removes a block entry with its lines and a flow entry with its comma', () => {
    assert.equal(
      yaml(block, { kind: 'remove', path: ['fsdp', 'cpu_offload'] }),
      block.replace('  cpu_offload: true\n', ''),
    );
    assert.equal(yaml(block, { kind: 'remove', path: ['fsdp'] }), '# run\ntraining: {max_steps: 10, seed: 1}\n');
    assert.equal(
      yaml(block, { kind: 'remove', path: ['training', 'max_steps'] }),
      block.replace('max_steps: 10, ', ''),
    );
    assert.equal(yaml(block, { kind: 'remove', path: ['training', 'seed'] }), block.replace(', seed: 1', ''));
  });

  it("renames a key, and writes strings as the file's YAML version reads them", () => {
    assert.equal(
      yaml(block, { kind: 'rename', path: ['fsdp', 'cpu_offload'], to: 'offload' }),
      block.replace('cpu_offload:', 'offload:'),
    );
    assert.equal(
      applyConfigEdits('mixed_precision: no\n', [{ kind: 'set', path: ['mixed_precision'], value: 'no' }], {
        kind: 'yaml',
        yamlVersion: '1.1',
      }),
      'mixed_precision: "no"\n',
    );
  });

  it('edits JSON with comments: set, remove, rename', () => {
    const text =
      '{\n  // batch\n  "train_batch_size": 30,\n  "fp16": {"enabled": true},\n  "zero_optimization": {"stage": 2}\n}\n';
    assert.equal(json(text, { kind: 'set', path: ['train_batch_size'], value: 32 }), text.replace('30', '32'));
    assert.equal(json(text, { kind: 'rename', path: ['fp16'], to: 'bf16' }), text.replace('"fp16"', '"bf16"'));
    const removed = json(text, { kind: 'remove', path: ['fp16'] });
    assert.ok(removed.includes('// batch') && !removed.includes('fp16'), removed);
    assert.deepEqual(JSON.parse(removed.replace('// batch', '')), {
      train_batch_size: 30,
      zero_optimization: { stage: 2 },
    });
  });
});
