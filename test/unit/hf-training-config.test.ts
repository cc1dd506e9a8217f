import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { applyConfigEdits } from '../../core/config/config-edits';
import { analyseConfig } from '../../core/config/config-analysis';
import { recogniseConfig } from '../../core/config/document-kind';
import { HF_TRAINING_VERSIONS } from '../../core/config/hf-training-config';
import { VENV_PYTHON } from '../harness/pytorch';

const repoRoot = path.resolve(__dirname, '../..');
const FIXTURES = path.join(repoRoot, 'test', 'fixtures', 'hf-training');
const read = (f: string) => readFileSync(path.join(FIXTURES, f), 'utf8');
const readFile = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : undefined);
const check = (text: string, file = path.join(FIXTURES, 'args.yaml')) =>
  analyseConfig('hf-training', text, file, { settings: { deepspeedLaunchedWith: 'unknown' }, readFile }).problems;
const show = (ps: ReturnType<typeof check>) =>
  ps.map((p) => `${p.severity} ${p.code} ${p.path.join('.')}: ${p.message}`).join('\n');

describe('Hugging Face TrainingArguments / TRL argument files', () => {
  it("reads the TRL CLI's own example config without a problem", () => {
    const text = read('trl-example_config.yaml');
    assert.equal(recogniseConfig(path.join(FIXTURES, 'trl-example_config.yaml'), text), 'hf-training');
    assert.deepEqual(
      check(text).filter((p) => p.severity !== 'hint'),
      [],
    );
  });

  it('reports in recipes written for older releases and other scripts exactly the arguments the installed ones lack', () => {
    const expected: Record<string, string[]> = {
      'alignment-handbook-zephyr-7b-beta-sft-config_full.yaml': [
        'chat_template',
        'dataset_mixture',
        'max_seq_length',
        'overwrite_output_dir',
        'torch_dtype',
        'warmup_ratio',
      ],
      'open-r1-DeepSeek-R1-Distill-Qwen-1.5B-grpo-config_demo.yaml': [
        'chat_template',
        'dataset_prompt_column',
        'max_prompt_length',
        'overwrite_output_dir',
        'reward_funcs',
        'system_prompt',
        'torch_dtype',
        'warmup_ratio',
      ],
    };
    for (const [file, keys] of Object.entries(expected)) {
      const problems = check(read(file));
      const errors = problems.filter((p) => p.severity === 'error');
      assert.ok(
        errors.every((p) => p.code === 'schema.unknown-key'),
        `${file}:\n${show(errors)}`,
      );
      assert.deepEqual(errors.map((p) => String(p.path[0])).sort(), keys, `${file}:\n${show(problems)}`);
      const renamed = errors.find((p) => p.path[0] === 'torch_dtype')!;
      assert.equal(renamed.suggestion, 'dtype');
    }
  });

  it('catches mistakes planted in the real example, with the fix that makes it right', () => {
    const original = read('trl-example_config.yaml');
    const typo = original.replace('learning_rate:', 'learning_rat:');
    const p = check(typo).find((x) => x.code === 'schema.unknown-key')!;
    assert.equal(p.suggestion, 'learning_rate');
    assert.equal(applyConfigEdits(typo, p.fixes![0].edits, { kind: 'yaml', yamlVersion: '1.1' }), original);
    const enumTypo = original.replace('  cosine', '  cosin');
    const e = check(enumTypo).find((x) => x.code === 'schema.enum')!;
    assert.equal(e.suggestion, 'cosine');
    assert.equal(
      e.range.start.line,
      original.split('\n').findIndex((l) => l === '  cosine'),
    );
  });

  it('follows deepspeed: to a real DeepSpeed file and finds each value it fixes that the arguments contradict', () => {
    // transformers' own test config fixes lr 3e-5 (optimizer and scheduler), weight_decay 3e-7 and fp16
    // where the TRL example says learning_rate 1e-4 and leaves weight_decay (0) and fp16 (false) at their defaults.
    const ds = path.relative(
      FIXTURES,
      path.join(
        repoRoot,
        'test',
        'fixtures',
        'public-configs',
        'huggingface-transformers',
        'tests',
        'deepspeed',
        'ds_config_zero3.json',
      ),
    );
    const text = `${read('trl-example_config.yaml')}deepspeed: ${ds}\n`;
    const found = check(text).filter((p) => p.code === 'hf.deepspeed');
    assert.deepEqual(
      found.map((p) => p.message.replace(/ but .*/, '')).sort(),
      [
        'ds_config_zero3.json sets optimizer.params.lr = 0.00003',
        'ds_config_zero3.json sets optimizer.params.weight_decay = 3e-7',
        'ds_config_zero3.json sets scheduler.params.warmup_max_lr = 0.00003',
        'ds_config_zero3.json sets fp16.enabled = true',
      ].sort(),
      show(found),
    );
    let fixed = text;
    for (let i = 0; i < 5; i++) {
      const next = check(fixed).find((p) => p.code === 'hf.deepspeed');
      if (!next) break;
      fixed = applyConfigEdits(fixed, next.fixes![0].edits, { kind: 'yaml', yamlVersion: '1.1' });
    }
    assert.deepEqual(
      check(fixed).filter((p) => p.code === 'hf.deepspeed' || p.severity === 'error'),
      [],
      fixed,
    );
    assert.match(fixed, /learning_rate:\s+0\.00003|learning_rate: 0\.00003/);
    const missing = check(`${read('trl-example_config.yaml')}deepspeed: nowhere/ds.json\n`).find(
      (p) => p.code === 'hf.deepspeed',
    );
    assert.match(missing!.message, /not found next to this file/);
  });
});

describe('the TrainingArguments / TRL schema is generated from the installed libraries', function () {
  this.timeout(300_000);

  it(`equals what scripts/schemas/hf_training_schema.py makes from the project's .venv (transformers ${HF_TRAINING_VERSIONS.transformers}, trl ${HF_TRAINING_VERSIONS.trl})`, () => {
    assert.ok(
      existsSync(VENV_PYTHON),
      `the project's Python environment is missing (${VENV_PYTHON}): npm test's set-up makes it`,
    );
    const r = spawnSync(VENV_PYTHON, [path.join(repoRoot, 'scripts', 'schemas', 'hf_training_schema.py'), '--check'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /matches the installed transformers/);
  });
});
