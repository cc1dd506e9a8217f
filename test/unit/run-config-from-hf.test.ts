// `model: { from_hf: DIR }` and `fsdp-train --from-hf DIR` (core/config/run-config-hf.ts): each
// alone gives the run config its model keys from the folder's config.json, relative DIR against
// the config's folder; the resolved config — what the runtime reads — carries the keys and the
// folder's absolute path; a folder that is missing or holds a model the runtime cannot train is a
// problem at model.from_hf, not a list of missing keys.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkRunConfigText, loadRunConfig } from '../../core/config/run-config';

// HuggingFaceTB/SmolLM2-135M's config.json as published (https://huggingface.co/HuggingFaceTB/SmolLM2-135M/blob/main/config.json), the keys a reader looks at.
const SMOLLM2 = {
  architectures: ['LlamaForCausalLM'],
  hidden_act: 'silu',
  hidden_size: 576,
  intermediate_size: 1536,
  max_position_embeddings: 8192,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  rms_norm_eps: 1e-5,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  vocab_size: 49152,
};

const config = (model: string) => `model:
${model}
data:
  train: data/train.tok
  seq_len: 256
training:
  max_steps: 10
  batch_size_per_gpu: 1
  learning_rate: 0.001
`;

describe('run config: the model from a Hugging Face folder', () => {
  let dir: string;
  let file: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'from-hf-'));
    mkdirSync(path.join(dir, 'models', 'smollm2'), { recursive: true });
    writeFileSync(path.join(dir, 'models', 'smollm2', 'config.json'), JSON.stringify(SMOLLM2));
    mkdirSync(path.join(dir, 'models', 'gemma'));
    writeFileSync(path.join(dir, 'models', 'gemma', 'config.json'), '{"model_type": "gemma3_text"}');
    mkdirSync(path.join(dir, 'configs'));
    file = path.join(dir, 'configs', 'run.yaml');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('model.from_hf alone: the resolved config carries the folder keys and its absolute path', () => {
    const loaded = loadRunConfig(config('  from_hf: ../models/smollm2'), file);
    assert.deepEqual(
      loaded.problems.filter((p) => p.severity === 'error'),
      [],
    );
    const m = loaded.config!.model;
    assert.equal(m.from_hf, path.join(dir, 'models', 'smollm2'));
    assert.equal(m.architecture, 'llama');
    assert.equal(m.d_model, 576);
    assert.equal(m.n_layers, 30);
    assert.equal(m.n_kv_heads, 3);
    assert.equal(m.intermediate_size, 1536);
    assert.equal(m.rope_theta, 100000);
    assert.equal(m.tie_embeddings, true);
  });

  it('keys written beside from_hf win over the folder (a shorter context)', () => {
    const loaded = loadRunConfig(config('  from_hf: ../models/smollm2\n  max_seq_len: 2048'), file);
    assert.equal(loaded.config?.model.max_seq_len, 2048);
    assert.equal(loaded.config?.model.n_layers, 30);
  });

  it('warns at a key written beside from_hf that says another model than the folder (a shorter context is not one)', () => {
    const text = config('  from_hf: ../models/smollm2\n  rope_theta: 10000\n  max_seq_len: 2048\n  n_layers: 30');
    const { problems, doc } = checkRunConfigText(text, file);
    assert.deepEqual(
      problems.map((p) => [p.severity, p.code, p.path.join('.')]),
      [['warning', 'model.from-hf-differs', 'model.rope_theta']],
    );
    assert.match(problems[0].message, /^rope_theta 10000 is not the folder's 100000 \(.*smollm2.config\.json\)/);
    assert.deepEqual(problems[0].range, doc.rangeOf(['model', 'rope_theta'], 'key'));
    assert.equal(loadRunConfig(text, file).config?.model.rope_theta, 10000);
  });

  it('--from-hf alone, with no model section in the file', () => {
    const text = config('').replace('model:\n\n', '');
    assert.ok(!text.includes('model'));
    const without = loadRunConfig(text, file);
    assert.equal(without.config, undefined);
    const loaded = loadRunConfig(text, file, [], { fromHf: path.join(dir, 'models', 'smollm2') });
    assert.deepEqual(
      loaded.problems.filter((p) => p.severity === 'error').map((p) => p.message),
      [],
    );
    assert.equal(loaded.config?.model.n_heads, 9);
    assert.equal(loaded.config?.model.from_hf, path.join(dir, 'models', 'smollm2'));
  });

  it('a missing folder is one problem at from_hf, with the folder resolved against the config', () => {
    const text = config('  from_hf: ../models/nowhere');
    const { problems, doc } = checkRunConfigText(text, file);
    const errors = problems.filter((p) => p.severity === 'error');
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0].code, 'model.from-hf');
    assert.deepEqual(errors[0].path, ['model', 'from_hf']);
    assert.match(errors[0].message, new RegExp(`${path.join(dir, 'models', 'nowhere')}: no such folder`));
    assert.deepEqual(errors[0].range, doc.rangeOf(['model', 'from_hf'], 'key'));
    assert.equal(loadRunConfig(text, file).config, undefined);
  });

  it('a folder the runtime cannot train is refused by its config.json key', () => {
    const { problems } = checkRunConfigText(config('  from_hf: ../models/gemma'), file);
    const errors = problems.filter((p) => p.severity === 'error');
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.match(errors[0].message, /gemma.config\.json: model_type "gemma3_text"/);
  });
});
