// Issue 35 item 2: the Llama family's model keys in the run-config schema, with their cross-key
// rules stated once in the schema (x-only-when, x-required-when, x-checks) and read here by
// core/config/schema-cross-keys.ts (the runtime reads the same keywords: native/test/config_test.cc).
import assert from 'node:assert/strict';
import { checkRunConfigText, loadRunConfig } from '../../core/config/run-config';
import { formatProblem } from '../../core/config/schema-problems';
import { ruleInfo } from '../../core/rules/catalog';

const rest = `data: {train: data/train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
`;
const llama = (model: string) =>
  `model: {architecture: llama, d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32, intermediate_size: 160${model}}\n${rest}`;
const gpt2 = (model: string) =>
  `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32${model}}\n${rest}`;

const problemsOf = (text: string) => checkRunConfigText(text, 'c.yaml').problems.map((p) => formatProblem('c.yaml', p));

describe('run config: the Llama family (issue 35 item 2)', () => {
  it('a llama config with every family key is clean, and a GPT-2 config is unchanged', () => {
    const full = llama(
      ', n_kv_heads: 2, head_dim: 16, rms_norm_eps: 1.0e-6, rope_theta: 500000, attention_bias: true, mlp_bias: false, tie_embeddings: false, rope_scaling: {rope_type: llama3, factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192}',
    );
    assert.deepEqual(problemsOf(full), []);
    assert.deepEqual(problemsOf(gpt2(', mlp_ratio: 4, dropout: 0.1')), []);
    assert.deepEqual(problemsOf(llama('').replace('llama', 'qwen3')), []);
  });

  it('refuses a family key on gpt2 and a GPT-2 key on llama, at the key, with a fix that removes it', () => {
    const [kv] = checkRunConfigText(gpt2(', n_kv_heads: 2'), 'c.yaml').problems;
    assert.equal(kv.code, 'schema.only-when');
    assert.equal(
      formatProblem('c.yaml', kv),
      'c.yaml:1:81 model.n_kv_heads: only for model.architecture llama or qwen3, not gpt2 (the default)',
    );
    assert.deepEqual(kv.fixes?.[0].edits, [{ kind: 'remove', path: ['model', 'n_kv_heads'] }]);
    assert.deepEqual(problemsOf(llama(', mlp_ratio: 4, dropout: 0.1')), [
      'c.yaml:1:126 model.mlp_ratio: only for model.architecture gpt2, not llama',
      'c.yaml:1:140 model.dropout: only for model.architecture gpt2, not llama',
    ]);
  });

  it('requires intermediate_size for llama and the llama3 rope fields, and refuses them for the default rope', () => {
    assert.deepEqual(problemsOf(llama('').replace(', intermediate_size: 160', '')), [
      'c.yaml:1:1 model: missing required key "intermediate_size" (model.architecture llama or qwen3)',
    ]);
    const partial = problemsOf(llama(', rope_scaling: {rope_type: llama3, factor: 8}'));
    assert.deepEqual(partial, [
      'c.yaml:1:126 model.rope_scaling: missing required key "low_freq_factor" (model.rope_scaling.rope_type llama3)',
      'c.yaml:1:126 model.rope_scaling: missing required key "high_freq_factor" (model.rope_scaling.rope_type llama3)',
      'c.yaml:1:126 model.rope_scaling: missing required key "original_max_position_embeddings" (model.rope_scaling.rope_type llama3)',
    ]);
    assert.deepEqual(problemsOf(llama(', rope_scaling: {factor: 8}')), [
      'c.yaml:1:141 model.rope_scaling.factor: only for model.rope_scaling.rope_type llama3, not default (the default)',
    ]);
  });

  it('states the cross-key rules at the key: kv heads divide heads, heads divide d_model unless head_dim, low < high', () => {
    const [kv] = checkRunConfigText(llama(', n_kv_heads: 3'), 'c.yaml').problems;
    assert.equal(kv.code, 'run.kv-heads-divide-heads');
    assert.match(kv.message, /^3 does not divide model\.n_heads \(4\): each key-value head serves/);
    assert.deepEqual(kv.path, ['model', 'n_kv_heads']);
    assert.ok(ruleInfo('run.kv-heads-divide-heads')?.why.includes('grouped-query'));

    // Qwen3 decouples head_dim from d_model: 5 heads of 16 in a 64-wide model is fine when stated.
    assert.deepEqual(
      problemsOf(llama(', head_dim: 16').replace('n_heads: 4', 'n_heads: 5').replace('llama', 'qwen3')),
      [],
    );
    const [width] = checkRunConfigText(llama('').replace('n_heads: 4', 'n_heads: 5'), 'c.yaml').problems;
    assert.equal(width.code, 'run.heads-divide-width');
    assert.match(width.message, /^5 does not divide model\.d_model \(64\)/);
    const [gptWidth] = checkRunConfigText(gpt2('').replace('n_heads: 4', 'n_heads: 5'), 'c.yaml').problems;
    assert.equal(gptWidth.code, 'run.heads-divide-width');

    // A missing n_heads is reported as missing, not also held to the rule by its default (4).
    assert.deepEqual(
      checkRunConfigText(
        gpt2('').replace('d_model: 64', 'd_model: 6').replace(' n_heads: 4,', ''),
        'c.yaml',
      ).problems.map((p) => p.code),
      ['schema.required'],
    );

    const freq = problemsOf(
      llama(
        ', rope_scaling: {rope_type: llama3, factor: 8, low_freq_factor: 4, high_freq_factor: 4, original_max_position_embeddings: 8192}',
      ),
    );
    assert.equal(freq.length, 1);
    assert.match(
      freq[0],
      /model\.rope_scaling\.low_freq_factor: 4 is not less than model\.rope_scaling\.high_freq_factor \(4\)/,
    );
  });

  it('fills the family defaults only where they apply, and --set is held to the same rules', () => {
    const l = loadRunConfig(llama(''), '/w/c.yaml').config!;
    assert.equal(l.model.rms_norm_eps, 1e-5);
    assert.equal(l.model.rope_theta, 10000);
    assert.deepEqual(l.model.rope_scaling, { rope_type: 'default' });
    assert.equal(l.model.attention_bias, false);
    assert.equal(l.model.mlp_ratio, undefined);
    assert.equal(l.model.dropout, undefined);
    const g = loadRunConfig(gpt2(''), '/w/c.yaml').config!;
    assert.equal(g.model.architecture, 'gpt2');
    assert.equal(g.model.mlp_ratio, 4);
    assert.equal(g.model.rope_theta, undefined);
    assert.equal(g.model.rope_scaling, undefined);

    const set = loadRunConfig(llama(''), '/w/c.yaml', ['model.n_kv_heads=3']);
    assert.equal(set.config, undefined);
    assert.ok(
      set.problems.some((p) => /after --set: model\.n_kv_heads: 3 does not divide model\.n_heads/.test(p.message)),
      set.problems.map((p) => p.message).join('\n'),
    );
  });
});
