import assert from 'node:assert/strict';
import { recogniseConfig, topLevelKeys } from '../../core/config/document-kind';

describe('which kind of config a file is', () => {
  it('by name', () => {
    assert.equal(recogniseConfig('/w/tiny.fsdp.yaml', ''), 'run-config');
    assert.equal(recogniseConfig('/w/ds_config_zero3.json', '{}'), 'deepspeed');
    assert.equal(recogniseConfig('/w/my-deepspeed.json', '{}'), 'deepspeed');
    assert.equal(recogniseConfig('/w/accelerate_fsdp.yaml', ''), 'accelerate');
    assert.equal(recogniseConfig('/home/u/.cache/huggingface/accelerate/default_config.yaml', ''), 'accelerate');
  });

  it('by the keys at the top, whatever the name', () => {
    assert.equal(recogniseConfig('/w/x.yaml', 'model: {}\ndata: {}\ntraining: {}\n'), 'run-config');
    assert.equal(recogniseConfig('/w/x.json', '{\n  // c\n  "zero_optimization": {"stage": 2}\n}'), 'deepspeed');
    assert.equal(recogniseConfig('/w/x.yml', 'distributed_type: FSDP\nnum_processes: 2\n'), 'accelerate');
    assert.equal(
      recogniseConfig('/w/package.json', '{"name": "x", "config": {"train_batch_size": 1}}'),
      undefined,
      'a nested key is not a top-level one',
    );
    assert.equal(recogniseConfig('/w/x.yaml', 'jobs:\n  model: a\n  data: b\n  training: c\n'), undefined);
  });

  it('a torchtitan TOML job config by its tables; TrainingArguments YAML or JSON by its keys', () => {
    assert.equal(
      recogniseConfig('/w/llama3_8b.toml', '[job]\ndump_folder = "./outputs"\n\n[model]\nname = "llama3"\n'),
      'torchtitan',
    );
    assert.equal(
      recogniseConfig('/w/pyproject.toml', '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n'),
      undefined,
    );
    assert.equal(
      recogniseConfig(
        '/w/sft.yaml',
        'model_name_or_path: Qwen/Qwen2-0.5B\nlearning_rate: 2.0e-5\nper_device_train_batch_size: 2\noutput_dir: out\n',
      ),
      'hf-training',
    );
    assert.equal(
      recogniseConfig('/w/args.json', '{"output_dir": "o", "num_train_epochs": 3, "per_device_train_batch_size": 8}'),
      'hf-training',
    );
    assert.equal(
      recogniseConfig(
        '/w/x.yaml',
        'distributed_type: FSDP\nnum_processes: 2\nlearning_rate: 1\noutput_dir: o\nbf16: true\n',
      ),
      'accelerate',
      'an accelerate config is not TrainingArguments',
    );
  });

  it('follows associations first, "none" included', () => {
    assert.equal(
      recogniseConfig('/w/conf/a.json', '{}', { 'conf/*.json': 'deepspeed' }),
      undefined,
      'a pattern with a slash matches the whole path',
    );
    assert.equal(recogniseConfig('/w/conf/a.json', '{}', { '**/conf/*.json': 'deepspeed' }), 'deepspeed');
    assert.equal(
      recogniseConfig('/w/ds_config.json', '{"train_batch_size": 8}', { 'ds_config.json': 'none' }),
      undefined,
    );
  });

  it('reads top-level keys without parsing, skipping comments and strings', () => {
    assert.deepEqual(
      [...topLevelKeys('a.json', '{"a": 1, /* "b": 2 */ "c": {"d": 3}, "e": "x\\": {"}')],
      ['a', 'c', 'e'],
    );
    assert.deepEqual([...topLevelKeys('a.yaml', 'a: 1\n  b: 2\n# c: 3\n"d": 4\n')], ['a', 'd']);
  });
});
