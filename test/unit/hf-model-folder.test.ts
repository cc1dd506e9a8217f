// A Hugging Face model folder's config.json as the run config's model section
// (core/config/hf-model-folder.ts): the published configs of the family map to the keys the
// runtime reads, and what it cannot train is refused by the key that says so.
//
// The config.json files below are the published ones, written out as the Hub serves them
// (https://huggingface.co/ORG/NAME/blob/main/config.json, read for this test 2026-12-07):
// HuggingFaceTB/SmolLM2-135M, meta-llama/Llama-3.2-1B, Qwen/Qwen3-0.6B, mistralai/Mistral-7B-v0.3
// and mistralai/Mistral-7B-v0.1 (whose sliding_window 4096 is refused). Keys no reader looks at
// (bos/eos ids, initializer_range, torch_dtype, transformers_version) are kept as published.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  HF_CONFIG_MAX_BYTES,
  readHfModelFolder,
  runConfigModelFromHf,
  type HfRunModel,
} from '../../core/config/hf-model-folder';

const SMOLLM2_135M = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 0,
  eos_token_id: 0,
  hidden_act: 'silu',
  hidden_size: 576,
  initializer_range: 0.041666666666666664,
  intermediate_size: 1536,
  is_llama_config: true,
  max_position_embeddings: 8192,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_interleaved: false,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.40.1',
  use_cache: true,
  vocab_size: 49152,
};

const LLAMA_32_1B = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: 128001,
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: 'llama3',
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.45.0.dev0',
  use_cache: true,
  vocab_size: 128256,
};

const QWEN3_06B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.51.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

const MISTRAL_7B_V03 = {
  architectures: ['MistralForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 4096,
  initializer_range: 0.02,
  intermediate_size: 14336,
  max_position_embeddings: 32768,
  model_type: 'mistral',
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  rope_theta: 1000000.0,
  sliding_window: null,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  transformers_version: '4.42.0.dev0',
  use_cache: true,
  vocab_size: 32768,
};

/** Parameters of the decoder family from the model keys (decoder-layout.md's tensors), to hold against the published totals. */
function parameters(m: HfRunModel): number {
  const n = (k: string) => m[k] as number;
  const [c, h, kv, d, f, v] = [
    n('d_model'),
    n('n_heads'),
    n('n_kv_heads'),
    n('head_dim'),
    n('intermediate_size'),
    n('vocab_size'),
  ];
  const block = 2 * c + (h + 2 * kv) * d * c + c * h * d + 3 * f * c + (m.architecture === 'qwen3' ? 2 * d : 0);
  return v * c + n('n_layers') * block + c + (m.tie_embeddings ? 0 : v * c);
}

const mapped = (json: unknown): HfRunModel => {
  const r = runConfigModelFromHf(json);
  if ('error' in r) throw new Error(r.error);
  return r.model;
};

const refusal = (json: unknown) => {
  const r = runConfigModelFromHf(json);
  assert.ok('error' in r, `expected a refusal, got ${JSON.stringify(r)}`);
  return r;
};

describe('Hugging Face config.json as the run config model section', () => {
  it('reads SmolLM2-135M as llama: 9 heads over 3 key-value heads, tied, 134,515,008 parameters', () => {
    const m = mapped(SMOLLM2_135M);
    assert.deepEqual(m, {
      architecture: 'llama',
      vocab_size: 49152,
      d_model: 576,
      n_layers: 30,
      n_heads: 9,
      n_kv_heads: 3,
      head_dim: 64,
      intermediate_size: 1536,
      max_seq_len: 8192,
      tie_embeddings: true,
      rms_norm_eps: 1e-5,
      rope_theta: 100000,
    });
    // The Hub's safetensors total for SmolLM2-135M.
    assert.equal(parameters(m), 134_515_008);
  });

  it("reads Llama-3.2-1B's llama3 rope scaling whole (1,235,814,400 parameters)", () => {
    const m = mapped(LLAMA_32_1B);
    assert.equal(m.architecture, 'llama');
    assert.deepEqual(m.rope_scaling, {
      rope_type: 'llama3',
      factor: 32,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    });
    assert.equal(m.rope_theta, 500000);
    assert.equal(m.max_seq_len, 131072);
    assert.equal(parameters(m), 1_235_814_400);
  });

  it('reads Qwen3-0.6B as qwen3 with head_dim 128 apart from 1024 / 16 (596,049,920 parameters)', () => {
    const m = mapped(QWEN3_06B);
    assert.equal(m.architecture, 'qwen3');
    assert.equal(m.head_dim, 128);
    assert.equal(m.d_model, 1024);
    assert.equal(m.n_heads, 16);
    assert.equal(m.rms_norm_eps, 1e-6);
    assert.equal(parameters(m), 596_049_920);
  });

  it('reads Mistral-7B-v0.3 (no sliding window) as llama, untied (7,248,023,552 parameters)', () => {
    const m = mapped(MISTRAL_7B_V03);
    assert.equal(m.architecture, 'llama');
    assert.equal(m.tie_embeddings, false);
    assert.equal(parameters(m), 7_248_023_552);
  });

  it("reads transformers 5's rope_parameters as 4.x's rope_theta and rope_scaling", () => {
    const { rope_theta, rope_scaling, ...rest } = LLAMA_32_1B;
    const m = mapped({ ...rest, rope_parameters: { ...rope_scaling, rope_theta } });
    assert.deepEqual(m, mapped(LLAMA_32_1B));
  });

  it('takes the family defaults transformers takes for absent keys (Qwen3: head_dim 128, 32 key-value heads)', () => {
    const { head_dim, num_key_value_heads, ...rest } = QWEN3_06B;
    assert.equal(head_dim, 128);
    assert.equal(num_key_value_heads, 8);
    const m = mapped({ ...rest, num_attention_heads: 32 });
    assert.equal(m.head_dim, 128);
    assert.equal(m.n_kv_heads, 32);
    const { head_dim: _d, num_key_value_heads: _kv, ...llama } = LLAMA_32_1B;
    const l = mapped(llama);
    assert.equal(l.head_dim, 64);
    assert.equal(l.n_kv_heads, 32);
  });

  describe('refuses what the runtime cannot train, naming the field', () => {
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      [
        'Mistral-7B-v0.1: a 4096 sliding window shorter than its 32768 positions',
        { ...MISTRAL_7B_V03, sliding_window: 4096, rope_theta: 10000, vocab_size: 32000 },
        'sliding_window',
        /4096 is shorter than max_position_embeddings 32768/,
      ],
      [
        "a Mistral config with no sliding_window (transformers' default 4096)",
        (({ sliding_window: _s, ...rest }) => rest)(MISTRAL_7B_V03),
        'sliding_window',
        /default when absent/,
      ],
      [
        'Qwen3 with use_sliding_window',
        { ...QWEN3_06B, use_sliding_window: true, sliding_window: 4096 },
        'use_sliding_window',
        /sliding-window attention/,
      ],
      [
        'layer_types with a sliding layer',
        { ...QWEN3_06B, layer_types: ['full_attention', 'sliding_attention'] },
        'layer_types',
        /layer 1 is "sliding_attention"/,
      ],
      [
        'Gemma 3',
        { architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 640 },
        'model_type',
        /"gemma3_text": Gemma 3/,
      ],
      [
        "Qwen3.5's linear attention",
        { architectures: ['Qwen3_5ForCausalLM'], model_type: 'qwen3_5' },
        'model_type',
        /linear attention/,
      ],
      [
        'Qwen3 MoE',
        { ...QWEN3_06B, architectures: ['Qwen3MoeForCausalLM'], model_type: 'qwen3_moe', num_experts: 128 },
        'model_type',
        /mixture of experts/,
      ],
      [
        'experts in a llama config',
        { ...SMOLLM2_135M, num_local_experts: 8 },
        'num_local_experts',
        /8: a mixture of experts/,
      ],
      [
        'a yarn rope scaling',
        { ...QWEN3_06B, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 32768 } },
        'rope_scaling.rope_type',
        /"yarn"/,
      ],
      [
        "an old-style 'type: linear' rope scaling",
        { ...SMOLLM2_135M, rope_scaling: { type: 'linear', factor: 2 } },
        'rope_scaling.type',
        /"linear"/,
      ],
      [
        'llama3 scaling without its factor',
        { ...LLAMA_32_1B, rope_scaling: { ...LLAMA_32_1B.rope_scaling, factor: undefined } },
        'rope_scaling.factor',
        /missing/,
      ],
      ['a GELU MLP', { ...SMOLLM2_135M, hidden_act: 'gelu' }, 'hidden_act', /"gelu"/],
      [
        'key-value heads that do not divide the heads',
        { ...SMOLLM2_135M, num_key_value_heads: 4 },
        'num_key_value_heads',
        /4 does not divide num_attention_heads 9/,
      ],
      ['no hidden_size', (({ hidden_size: _h, ...rest }) => rest)(SMOLLM2_135M), 'hidden_size', /missing/],
      ['a fractional layer count', { ...SMOLLM2_135M, num_hidden_layers: 2.5 }, 'num_hidden_layers', /2.5/],
      [
        'architectures that is not model_type',
        { ...SMOLLM2_135M, architectures: ['Qwen3ForCausalLM'] },
        'architectures',
        /"Qwen3ForCausalLM" is not model_type "llama"/,
      ],
    ];
    for (const [what, json, key, message] of cases)
      it(`${what}: ${key}`, () => {
        const r = refusal(json);
        assert.equal(r.key, key, r.error);
        assert.match(r.error, message);
        assert.ok(r.error.includes(key), `the message names ${key}: ${r.error}`);
      });
  });

  it('reads a GPT-2 folder as architecture gpt2', () => {
    const m = mapped({
      architectures: ['GPT2LMHeadModel'],
      model_type: 'gpt2',
      n_embd: 64,
      n_layer: 2,
      n_head: 4,
      n_positions: 128,
      vocab_size: 300,
    });
    assert.deepEqual(m, {
      architecture: 'gpt2',
      vocab_size: 300,
      d_model: 64,
      n_layers: 2,
      n_heads: 4,
      max_seq_len: 128,
      mlp_ratio: 4,
      tie_embeddings: true,
    });
  });
});

describe('config.json as transformers 5 writes it (test/fixtures/hf-decoder, saved by the pinned .venv)', () => {
  const FIXTURES = path.join(__dirname, '..', 'fixtures', 'hf-decoder');

  it('reads rope_parameters and layer_types of a Qwen3 folder saved by transformers 5.24', () => {
    const r = readHfModelFolder(path.join(FIXTURES, 'qwen3-bf16-sharded'));
    assert.ok(!('error' in r), JSON.stringify(r));
    assert.deepEqual(r.model, {
      architecture: 'qwen3',
      vocab_size: 64,
      d_model: 16,
      n_layers: 2,
      n_heads: 4,
      n_kv_heads: 2,
      head_dim: 8,
      intermediate_size: 24,
      max_seq_len: 128,
      tie_embeddings: true,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
    });
  });

  it('reads the biases of a Llama folder saved by transformers 5.24', () => {
    const r = readHfModelFolder(path.join(FIXTURES, 'llama-biases'));
    assert.ok(!('error' in r), JSON.stringify(r));
    assert.equal(r.model.attention_bias, true);
    assert.equal(r.model.mlp_bias, true);
    assert.equal(r.model.tie_embeddings, false);
    assert.equal(r.model.head_dim, 4);
  });
});

describe('reading a Hugging Face folder', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hf-folder-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const folder = (name: string, config?: string) => {
    const d = path.join(dir, name);
    mkdirSync(d);
    if (config !== undefined) writeFileSync(path.join(d, 'config.json'), config);
    return d;
  };

  it('reads the folder, or its config.json named directly', () => {
    const d = folder('smollm2', JSON.stringify(SMOLLM2_135M));
    const r = readHfModelFolder(d);
    assert.ok(!('error' in r), JSON.stringify(r));
    assert.equal(r.configFile, path.join(d, 'config.json'));
    assert.equal(r.described, 'LlamaForCausalLM (llama)');
    assert.deepEqual(readHfModelFolder(path.join(d, 'config.json')), r);
  });

  it('says a missing folder, a folder without config.json and a file apart', () => {
    assert.match((readHfModelFolder(path.join(dir, 'nowhere')) as { error: string }).error, /nowhere: no such folder/);
    const empty = folder('empty');
    assert.match((readHfModelFolder(empty) as { error: string }).error, /empty has no config\.json/);
    const file = path.join(dir, 'weights.bin');
    writeFileSync(file, 'x');
    assert.match((readHfModelFolder(file) as { error: string }).error, /weights\.bin is a file/);
  });

  it('names the file of a refusal, bad JSON, a config.json too large to be one and a device', () => {
    const gemma = folder('gemma', JSON.stringify({ model_type: 'gemma3_text' }));
    const r = readHfModelFolder(gemma) as { error: string; key?: string };
    assert.equal(r.key, 'model_type');
    assert.ok(r.error.startsWith(path.join(gemma, 'config.json')), r.error);
    assert.match(
      (readHfModelFolder(folder('bad', '{"model_type": ')) as { error: string }).error,
      /bad.config\.json: not JSON/,
    );
    const big = folder('big', `{"pad": "${'x'.repeat(HF_CONFIG_MAX_BYTES)}"}`);
    assert.match((readHfModelFolder(big) as { error: string }).error, /larger than the 1048576 a config\.json can be/);
    const linked = folder('linked');
    symlinkSync('/dev/null', path.join(linked, 'config.json'));
    assert.match((readHfModelFolder(linked) as { error: string }).error, /not a regular file/);
  });
});
