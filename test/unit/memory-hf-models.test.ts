// Hugging Face models: every family's parameter count from a real config.json equals the count its
// publisher states (test/fixtures/hf-models/SOURCES.md), and a model is found by path, in a local
// Hugging Face cache laid out as huggingface_hub lays it out, or by the model_name_or_path a script
// beside the config names. No network: the caches are temporary folders.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { modelWords } from '../../core/memory/config-memory';
import { shapeFromHfConfig } from '../../core/memory/hf-config';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { findHfModel, findModelName, hfCacheDir, hfModelSource, namedModel } from '../../core/memory/inputs/hf-model';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { parameterCounts } from '../../core/memory/model-shape';
import { familyOfLayerClass } from '../../core/memory/inputs/model-from-options';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'hf-models');
const config = (folder: string) =>
  JSON.parse(readFileSync(path.join(FIXTURES, folder, 'config.json'), 'utf8')) as Record<string, unknown>;

function count(json: unknown): number {
  const m = shapeFromHfConfig(json, 'x');
  assert.ok(!('error' in m), 'error' in m ? m.error : '');
  return parameterCounts(m.shape).total;
}

describe('Hugging Face config.json: parameter counts equal the published ones', () => {
  const published: Array<[string, number]> = [
    ['meta-llama--Llama-3.1-8B', 8_030_261_248],
    ['mistralai--Mistral-7B-v0.1', 7_241_732_096],
    ['mistralai--Mixtral-8x7B-v0.1', 46_702_792_704],
    ['Qwen--Qwen2-0.5B', 494_032_768],
    ['Qwen--Qwen2-7B', 7_615_616_512],
    ['google--gemma-2b', 2_506_172_416],
    ['openai-community--gpt2', 124_439_808],
    ['microsoft--phi-2', 2_779_683_840],
  ];
  for (const [folder, n] of published) {
    it(`${folder.replace('--', '/')}: ${n.toLocaleString('en-US')}`, () => assert.equal(count(config(folder)), n));
  }

  it("GPT-NeoX: RedPajama-INCITE 3B's architecture with Pythia-2.8B's 50,304-token vocabulary has Pythia-2.8B's 2,775,208,960", () => {
    const neox = config('togethercomputer--RedPajama-INCITE-Base-3B-v1');
    assert.equal(count(neox), 2_775_864_320);
    assert.equal(count({ ...neox, vocab_size: 50304 }), 2_775_208_960);
  });

  it('reads Phi-2\'s current format (model_type "phi", as transformers ≥ 4.37 writes it) to the same count', () => {
    const current = {
      architectures: ['PhiForCausalLM'],
      model_type: 'phi',
      hidden_size: 2560,
      intermediate_size: 10240,
      num_attention_heads: 32,
      num_hidden_layers: 32,
      num_key_value_heads: 32,
      partial_rotary_factor: 0.4,
      max_position_embeddings: 2048,
      tie_word_embeddings: false,
      vocab_size: 51200,
    };
    assert.equal(count(current), 2_779_683_840);
  });

  it('names what it cannot read, and what is missing', () => {
    assert.match(
      (shapeFromHfConfig({ model_type: 't5' }, 'x') as { error: string }).error,
      /model_type "t5" is not one the estimator reads/,
    );
    const missing = (shapeFromHfConfig({ model_type: 'llama', hidden_size: 4096 }, 'x') as { error: string }).error;
    for (const key of ['vocab_size', 'num_hidden_layers', 'num_attention_heads', 'intermediate_size'])
      assert.match(missing, new RegExp(`lacks .*${key}`));
    assert.match((shapeFromHfConfig([], 'x') as { error: string }).error, /not a JSON object/);
  });
});

describe('finding a Hugging Face model on this machine', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-hf-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A cache as huggingface_hub writes it: models--ORG--NAME/{refs/main, snapshots/<commit>/config.json}. */
  function cache(hub: string, id: string, json: unknown, commit = '0123456789abcdef0123456789abcdef01234567'): string {
    const repo = path.join(hub, `models--${id.replace('/', '--')}`);
    mkdirSync(path.join(repo, 'snapshots', commit), { recursive: true });
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs', 'main'), commit);
    const file = path.join(repo, 'snapshots', commit, 'config.json');
    writeFileSync(file, JSON.stringify(json));
    return file;
  }

  it('looks in $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub', () => {
    assert.equal(hfCacheDir({ HF_HUB_CACHE: '/a', HF_HOME: '/b' }, '/home/u'), '/a');
    assert.equal(hfCacheDir({ HF_HOME: '/b' }, '/home/u'), path.join('/b', 'hub'));
    assert.equal(hfCacheDir({}, '/home/u'), path.join('/home/u', '.cache', 'huggingface', 'hub'));
  });

  it('finds a model id in the cache at the commit refs/main names; 8.03 B parameters for Llama 3.1 8B', () => {
    const hub = path.join(dir, '.cache', 'huggingface', 'hub');
    cache(
      hub,
      'meta-llama/Llama-3.1-8B',
      { ...config('meta-llama--Llama-3.1-8B'), num_hidden_layers: 1 },
      'old0000000000000000000000000000000000000',
    );
    const file = cache(hub, 'meta-llama/Llama-3.1-8B', config('meta-llama--Llama-3.1-8B'));
    const found = findHfModel('meta-llama/Llama-3.1-8B', { env: {}, home: dir });
    assert.ok(found && !('error' in found));
    assert.equal(parameterCounts(found.shape).total, 8_030_261_248);
    assert.equal(found.source!.from, file);
    assert.match(found.note, /meta-llama\/Llama-3\.1-8B \(llama, 8\.03 B parameters\) from the Hugging Face cache/);
    assert.equal(
      findHfModel('meta-llama/Llama-3.1-70B', { env: {}, home: dir }),
      undefined,
      'not cached: not found, nothing fetched',
    );
  });

  it('finds a model by folder or config.json path, relative to the config being estimated', () => {
    const model = path.join(dir, 'models', 'my-qwen');
    mkdirSync(model, { recursive: true });
    writeFileSync(path.join(model, 'config.json'), JSON.stringify(config('Qwen--Qwen2-0.5B')));
    for (const ref of ['models/my-qwen', './models/my-qwen/config.json', model]) {
      const found = findHfModel(ref, { baseDir: dir, env: {}, home: dir });
      assert.ok(found && !('error' in found), ref);
      assert.equal(parameterCounts(found.shape).total, 494_032_768, ref);
    }
    writeFileSync(path.join(model, 'config.json'), '{ not json');
    assert.match(
      (findHfModel('models/my-qwen', { baseDir: dir }) as { error: string }).error,
      /my-qwen\/config\.json: .*JSON/,
    );
  });

  it('finds the model_name_or_path a script beside the config names, and where', () => {
    assert.deepEqual(
      findModelName('accelerate launch train.py \\\n  --model_name_or_path meta-llama/Llama-3.1-8B --bf16'),
      { ref: 'meta-llama/Llama-3.1-8B', line: 2 },
    );
    assert.deepEqual(findModelName('model_name_or_path: Qwen/Qwen2-7B\n'), { ref: 'Qwen/Qwen2-7B', line: 1 });
    assert.deepEqual(findModelName('m = AutoModelForCausalLM.from_pretrained("google/gemma-2b")'), {
      ref: 'google/gemma-2b',
      line: 1,
    });
    assert.equal(findModelName('--model_name_or_path $MODEL'), undefined, 'a shell variable says nothing');
    writeFileSync(path.join(dir, 'ds_config.json'), '{}');
    writeFileSync(
      path.join(dir, 'train.sh'),
      '#!/bin/sh\ndeepspeed train.py --deepspeed ds_config.json \\\n  --model_name_or_path meta-llama/Llama-3.1-8B\n',
    );
    assert.deepEqual(namedModel(path.join(dir, 'ds_config.json')), {
      ref: 'meta-llama/Llama-3.1-8B',
      where: 'train.sh:3',
    });
  });

  it('a DeepSpeed config estimates the model its comment names, and says which and from where', () => {
    cache(path.join(dir, 'hub'), 'meta-llama/Llama-3.1-8B', config('meta-llama--Llama-3.1-8B'));
    const ds =
      '// fsdp-studio: model=meta-llama/Llama-3.1-8B gpu=H100\n{ "train_micro_batch_size_per_gpu": 1, "bf16": { "enabled": true }, "zero_optimization": { "stage": 3 } }\n';
    const file = path.join(dir, 'ds_config.json');
    const read = readConfigForEstimate(
      ds,
      file,
      {},
      undefined,
      hfModelSource(file, { env: { HF_HUB_CACHE: path.join(dir, 'hub') }, home: dir }),
    );
    assert.ok(!isConfigInputError(read), isConfigInputError(read) ? read.error : '');
    assert.equal(parameterCounts(read.input.model).total, 8_030_261_248);
    assert.equal(modelWords(read.model), 'for meta-llama/Llama-3.1-8B (8.03 B parameters, Hugging Face cache)');
    // Without the comment, the script beside it names the model.
    writeFileSync(path.join(dir, 'train.sh'), 'torchrun train.py --model_name_or_path meta-llama/Llama-3.1-8B\n');
    const named = readConfigForEstimate(
      ds.split('\n').slice(1).join('\n'),
      file,
      {},
      undefined,
      hfModelSource(file, { env: { HF_HUB_CACHE: path.join(dir, 'hub') }, home: dir }),
    );
    assert.ok(!isConfigInputError(named));
    assert.equal(
      modelWords(named.model),
      'for meta-llama/Llama-3.1-8B (8.03 B parameters, Hugging Face cache, named by train.sh:1)',
    );
    // A model named but found nowhere is an error that says where it looked.
    const missing = readConfigForEstimate(
      ds.replace('Llama-3.1-8B', 'Llama-9'),
      file,
      {},
      undefined,
      hfModelSource(file, { env: { HF_HUB_CACHE: path.join(dir, 'hub') }, home: dir }),
    );
    assert.ok(isConfigInputError(missing));
    assert.match(
      missing.error,
      /model "meta-llama\/Llama-9" is not a preset .*, a folder with a config\.json, or a model in the local Hugging Face cache/,
    );
  });

  it("a preset's Hugging Face id is its preset offline, from the comment or a script beside the config (issue 39)", () => {
    const hub = path.join(dir, 'hub');
    const file = path.join(dir, 'fsdp.yaml');
    const yaml = 'distributed_type: FSDP\nnum_processes: 8\nmixed_precision: bf16\n';
    const read = (text: string) => {
      const r = readConfigForEstimate(
        text,
        file,
        {},
        'accelerate',
        hfModelSource(file, { env: { HF_HUB_CACHE: hub }, home: dir }),
      );
      assert.ok(!isConfigInputError(r), isConfigInputError(r) ? r.error : '');
      return r;
    };
    const commented = read(`# fsdp-studio: model=meta-llama/Llama-2-7b-hf\n${yaml}`);
    assert.equal(modelWords(commented.model), 'for Llama 2 7B (6.74 B parameters, preset)');
    writeFileSync(file, yaml);
    writeFileSync(
      path.join(dir, 'train.py'),
      'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")\n',
    );
    assert.equal(modelWords(read(yaml).model), 'for Llama 2 7B (6.74 B parameters, preset, named by train.py:1)');
    // The model's own config.json, when the cache has it, is read before the preset.
    const gpt2 = cache(hub, 'openai-community/gpt2', config('openai-community--gpt2'));
    const cached = read(`# fsdp-studio: model=openai-community/gpt2\n${yaml}`);
    assert.equal(cached.model?.from, gpt2);
  });

  it('the wrap class names the family: its presets, or none, and never a model of another family (issue 39)', () => {
    const family = (cls: string) => familyOfLayerClass(cls, 'x');
    assert.equal(family('LlamaDecoderLayer')?.name, 'Llama');
    assert.ok(family('LlamaDecoderLayer')!.presets.every((p) => p.startsWith('llama')));
    assert.deepEqual(family('GPT2Block')?.presets, ['gpt2-124m', 'gpt2-355m', 'gpt2-774m', 'gpt2-1.5b']);
    assert.deepEqual(family('MistralDecoderLayer'), { name: 'Mistral', presets: [], where: 'x' });
    assert.equal(family('Block'), undefined, 'a generic block names no model');
    // Nothing names the model: the stand-in is of the family, and said to be assumed.
    const read = readConfigForEstimate(
      'distributed_type: FSDP\nfsdp_config:\n  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n',
      path.join(dir, 'fsdp.yaml'),
      {},
      'accelerate',
      hfModelSource(path.join(dir, 'fsdp.yaml'), { env: { HF_HUB_CACHE: path.join(dir, 'hub') }, home: dir }),
    );
    assert.ok(!isConfigInputError(read));
    assert.equal(read.model?.assumed, true);
    assert.equal(read.model?.family?.name, 'Llama');
    assert.match(read.model?.name ?? '', /^Llama/);
  });
});
