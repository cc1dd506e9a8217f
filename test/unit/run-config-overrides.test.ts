// Issue 19, item 10: `--set` cannot reach Object.prototype (`__proto__.x=…` polluted every object
// of the CLI), and non-finite numbers (YAML .inf/.nan) are refused where they are written.
import assert from 'node:assert/strict';
import { loadRunConfig } from '../../core/config/run-config';

const text = `model: {d_model: 32, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32}
data: {train: x.tok}
training: {batch_size_per_gpu: 4, max_steps: 5, learning_rate: 0.001}
`;

describe('run config: --set overrides and non-finite numbers', () => {
  afterEach(() => {
    for (const key of ['polluted', 'x']) delete (Object.prototype as Record<string, unknown>)[key];
  });

  for (const assignment of [
    '__proto__.polluted=1',
    'training.__proto__.polluted=1',
    'constructor.prototype.polluted=1',
    'model.constructor.prototype.polluted=yes',
  ]) {
    it(`refuses --set ${assignment} without touching Object.prototype`, () => {
      const loaded = loadRunConfig(text, '/cfg/run.fsdp.yaml', [assignment]);
      assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype was polluted');
      assert.equal(loaded.config, undefined);
      assert.match(loaded.problems.map((p) => p.message).join('\n'), /is not a config key/);
    });
  }

  it('still applies ordinary overrides, creating sections', () => {
    const loaded = loadRunConfig(text, '/cfg/run.fsdp.yaml', [
      'training.max_steps=9',
      'fsdp.sharding_strategy=FULL_SHARD',
    ]);
    assert.deepEqual(loaded.problems, []);
    assert.equal(loaded.config?.training.max_steps, 9);
    assert.equal(loaded.config?.fsdp.sharding_strategy, 'FULL_SHARD');
  });

  for (const [written, said] of [
    ['.inf', '.inf (infinity)'],
    ['-.Inf', '-.inf (minus infinity)'],
    ['.NaN', '.nan (not a number)'],
  ]) {
    it(`reports learning_rate: ${written} at its line, not as null in the resolved config`, () => {
      const loaded = loadRunConfig(
        text.replace('learning_rate: 0.001', `learning_rate: ${written}`),
        '/cfg/run.fsdp.yaml',
      );
      const p = loaded.problems.filter((q) => q.path.join('.') === 'training.learning_rate');
      assert.equal(p.length, 1, JSON.stringify(loaded.problems));
      assert.equal(p[0].message, `must be a finite number, got ${said}`);
      assert.equal(p[0].range.start.line, 2);
    });
  }
});
