import assert from 'node:assert/strict';
import { setYamlKey, type TextEdit } from '../../core/config/yaml-key-edit';

function apply(text: string, path: string[], value: string | number): string {
  const e = setYamlKey(text, path, value);
  assert.ok(!('error' in e), 'error' in e ? e.error : '');
  const t = e as TextEdit;
  return text.slice(0, t.offset) + t.text + text.slice(t.offset + t.length);
}

describe('setting one YAML key as the smallest edit', () => {
  const config = [
    '# my run',
    'name: r  # a comment',
    'env: {OMP_NUM_THREADS: 1, A: "x"}',
    'training:',
    '  learning_rate: 3.0e-3   # tuned',
    '  max_steps: 150',
    '',
    'logging:',
    '  every_n_steps: 1',
    '',
  ].join('\n');

  it('replaces only the value of a key that is there', () => {
    const out = apply(config, ['training', 'learning_rate'], 0.0015);
    assert.equal(out, config.replace('3.0e-3', '0.0015'), 'comments, flow maps and spacing untouched');
  });

  it("inserts a missing key after its map's last entry, at its indentation", () => {
    const out = apply(config, ['training', 'max_grad_norm'], 1);
    assert.equal(out, config.replace('  max_steps: 150\n', '  max_steps: 150\n  max_grad_norm: 1\n'));
  });

  it('adds a missing map at the end of the document', () => {
    const out = apply(config, ['stability', 'on_nan'], 'rollback');
    assert.equal(out, config.replace('  every_n_steps: 1\n', '  every_n_steps: 1\nstability:\n  on_nan: rollback\n'));
  });

  it('keeps four-space indentation', () => {
    const text = 'training:\n    lr: 1\n    steps: 2\nmodel:\n    d: 4\n';
    assert.equal(
      apply(text, ['training', 'warmup_steps'], 20),
      'training:\n    lr: 1\n    steps: 2\n    warmup_steps: 20\nmodel:\n    d: 4\n',
    );
  });

  it('refuses what it cannot edit safely, saying why', () => {
    assert.match(
      (setYamlKey('training: {lr: 1}\n', ['training', 'max_grad_norm'], 1) as { error: string }).error,
      /flow map/,
    );
    assert.match((setYamlKey('training: [1\n', ['training', 'x'], 1) as { error: string }).error, /does not parse/);
    assert.match(
      (setYamlKey('training: 3\n', ['training', 'x'], 1) as { error: string }).error,
      /training is not a map/,
    );
  });
});
