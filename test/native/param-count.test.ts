// Issue 35 item 2: the editor's parameter count of a run config (core/memory/model-shape.ts
// runConfigShape, what inline memory and the estimator show) equals the runtime's ParamLayout total
// (the addon's memoryPlan n_params) for GPT-2 and the Llama family: GQA, head_dim apart from
// d_model, q/k norms, biases, tied and untied heads.
import assert from 'node:assert/strict';
import { loadRunConfig } from '../../core/config/run-config';
import { parameterCounts, runConfigShape } from '../../core/memory/model-shape';
import { loadAddon } from './native-build';

const addon = loadAddon();

const config = (model: string) => {
  const text = `model: ${model}\ndata: {train: t.tok, seq_len: 16}\ntraining: {batch_size_per_gpu: 2, max_steps: 4, learning_rate: 0.001}\n`;
  const loaded = loadRunConfig(text, '/w/c.yaml');
  assert.ok(loaded.config, JSON.stringify(loaded.problems.map((p) => p.message)));
  return loaded.config;
};

const CASES: Array<[string, string]> = [
  ['gpt2, tied', '{d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}'],
  [
    'gpt2, untied, mlp_ratio 3',
    '{d_model: 48, n_layers: 3, n_heads: 3, vocab_size: 300, max_seq_len: 16, mlp_ratio: 3, tie_embeddings: false}',
  ],
  [
    'llama, GQA 4:2, untied, no biases',
    '{architecture: llama, d_model: 64, n_layers: 2, n_heads: 4, n_kv_heads: 2, vocab_size: 70000, max_seq_len: 32, intermediate_size: 172, tie_embeddings: false}',
  ],
  [
    'llama, attention and MLP biases, llama3 rope, tied',
    '{architecture: llama, d_model: 48, n_layers: 3, n_heads: 6, n_kv_heads: 3, vocab_size: 256, max_seq_len: 64, intermediate_size: 100, attention_bias: true, mlp_bias: true, rope_scaling: {rope_type: llama3, factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 16}}',
  ],
  [
    'qwen3, head_dim 16 apart from 48 / 6, MQA, tied',
    '{architecture: qwen3, d_model: 48, n_layers: 2, n_heads: 6, n_kv_heads: 1, head_dim: 16, vocab_size: 512, max_seq_len: 32, intermediate_size: 96}',
  ],
  [
    'qwen3, attention bias only, untied',
    '{architecture: qwen3, d_model: 32, n_layers: 1, n_heads: 2, vocab_size: 100, max_seq_len: 8, intermediate_size: 64, attention_bias: true, tie_embeddings: false}',
  ],
];

describe('parameter count: the estimator against the runtime layout (issue 35 item 2)', () => {
  for (const [name, model] of CASES) {
    it(name, () => {
      const c = config(model);
      const estimated = parameterCounts(runConfigShape(c.model)).total;
      const laidOut = addon.memoryPlan(c).n_params;
      assert.equal(estimated, laidOut);
      assert.ok(laidOut > 0);
    });
  }

  it('the family counts what decoder-layout.md lays out (one case by hand)', () => {
    // qwen3, C 48, L 2, H 6, KV 1, D 16, F 96, V 512, tied: wte; per block ln1, qkv (6+2)·16×48,
    // q/k norms 2·16, o 48×96, ln2, gate_up 2·96×48, down 48×96; final norm.
    const block = 48 + 128 * 48 + 32 + 48 * 96 + 48 + 192 * 48 + 48 * 96;
    const c = config(CASES[4][1]);
    assert.equal(parameterCounts(runConfigShape(c.model)).total, 512 * 48 + 2 * block + 48);
  });
});
