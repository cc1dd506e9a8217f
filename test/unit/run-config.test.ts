import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkRunConfigText, loadRunConfig, runConfigSchema } from '../../core/config/run-config';
import { formatProblem } from '../../core/config/schema-problems';

const root = path.resolve(__dirname, '../..');
const minimal = `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: data/train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
`;

describe('run config', () => {
  it('the sample configs validate without problems', () => {
    for (const name of ['tiny-cpu.yaml']) {
      const file = path.join(root, 'samples', name);
      const { problems } = checkRunConfigText(readFileSync(file, 'utf8'), file);
      assert.deepEqual(
        problems.map((p) => formatProblem(name, p)),
        [],
      );
    }
  });

  it('names the file, line, column and key of a misspelled enum value, with the likely intent', () => {
    const text = `${minimal}fsdp:\n  sharding_strategy: FULL_SHRAD\n`;
    const { problems } = checkRunConfigText(text, 'config.yaml');
    assert.equal(problems.length, 1);
    assert.equal(
      formatProblem('config.yaml', problems[0]),
      'config.yaml:5:22 fsdp.sharding_strategy: "FULL_SHRAD" is not one of NO_SHARD, SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD, HYBRID_SHARD; did you mean "FULL_SHARD"?',
    );
    assert.equal(problems[0].suggestion, 'FULL_SHARD');
  });

  it('points an unknown key at the key itself and suggests the near miss', () => {
    const text = minimal.replace('learning_rate: 0.001', 'learning_rate: 0.001, max_grad_nrom: 1.0');
    const [p] = checkRunConfigText(text, 'c.yaml').problems;
    assert.equal(p.code, 'schema.unknown-key');
    assert.deepEqual(p.path, ['training', 'max_grad_nrom']);
    assert.equal(p.suggestion, 'max_grad_norm');
    assert.deepEqual(p.range.start, { line: 2, character: 71 });
    assert.deepEqual(p.range.end, { line: 2, character: 84 });
  });

  it('reports wrong types, ranges and missing sections in JSON with comments too', () => {
    const text = `{
  // a comment, as DeepSpeed's hjson allows
  "model": {"d_model": "wide", "n_layers": 0, "n_heads": 4, "vocab_size": 256, "max_seq_len": 32},
  "training": {"batch_size_per_gpu": 2, "max_steps": 10, "learning_rate": 0.001},
}`;
    const { problems } = checkRunConfigText(text, 'run.json');
    const lines = problems.map((p) => formatProblem('run.json', p)).sort();
    assert.deepEqual(lines, [
      'run.json:1:1 missing required key "data"',
      'run.json:3:24 model.d_model: must be an integer, got the string "wide"',
      'run.json:3:44 model.n_layers: must be >= 1, got 0',
    ]);
  });

  it('reports a YAML syntax error as a problem, not an exception', () => {
    const { problems } = checkRunConfigText('model: {d_model: 64\ntraining: [', 'bad.yaml');
    assert.ok(problems.length >= 1);
    assert.equal(problems[0].code, 'syntax');
  });

  it('resolves defaults from the schema, folds zero_stage and makes paths absolute', () => {
    const { config, problems } = loadRunConfig(`${minimal}fsdp: {zero_stage: 2}\n`, '/work/cfg/run.yaml');
    assert.deepEqual(problems, []);
    assert.ok(config);
    assert.equal(config.fsdp.sharding_strategy, 'SHARD_GRAD_OP');
    assert.equal(config.fsdp.zero_stage, undefined);
    assert.equal(config.data.seq_len, 32, 'seq_len defaults to max_seq_len');
    assert.equal(config.data.train, '/work/cfg/data/train.tok');
    assert.equal(config.training.gradient_accumulation_steps, 1);
    assert.deepEqual(config.training.betas, [0.9, 0.95]);
    assert.equal(config.mixed_precision.loss_scale?.initial, 65536);
    assert.equal(config.debug.inject_nan, undefined, 'a section with required keys is not invented');
  });

  it('rejects zero_stage that contradicts sharding_strategy', () => {
    const { problems } = checkRunConfigText(
      `${minimal}fsdp: {zero_stage: 1, sharding_strategy: FULL_SHARD}\n`,
      'c.yaml',
    );
    assert.equal(problems[0].code, 'fsdp.zero-stage-conflict');
  });

  it('applies --set overrides and validates the result', () => {
    const ok = loadRunConfig(minimal, '/c/run.yaml', [
      'training.max_steps=3',
      'fsdp.cpu_offload=true',
      'training.betas=[0.8, 0.9]',
    ]);
    assert.equal(ok.config?.training.max_steps, 3);
    assert.equal(ok.config?.fsdp.cpu_offload, true);
    assert.deepEqual(ok.config?.training.betas, [0.8, 0.9]);
    const bad = loadRunConfig(minimal, '/c/run.yaml', ['training.max_steps=-1']);
    assert.equal(bad.config, undefined);
    assert.match(bad.problems[0].message, /after --set: training.max_steps must be >= 1/);
    const malformed = loadRunConfig(minimal, '/c/run.yaml', ['max_steps']);
    assert.match(malformed.problems[0].message, /expected key=value/);
  });

  it('every key of the schema has a description, and every optional key a default or a stated meaning when absent', () => {
    const missing: string[] = [];
    const defs = runConfigSchema.definitions as Record<
      string,
      { properties?: Record<string, Record<string, unknown>>; required?: string[] }
    >;
    // Keys whose absence has a meaning of its own, said in their description.
    const absentMeans = new Set([
      'data.val',
      'data.seq_len',
      'fsdp.zero_stage',
      'fsdp.ranks_per_node',
      'activation_checkpointing.memory_budget_gb',
      'launch.gpu',
      'debug.inject_nan',
      'debug.inject_nan.op',
      'mixed_precision.loss_scale',
      'launch.hosts',
      // from_hf absent: the keys are the config's; n_kv_heads: n_heads; head_dim: d_model / n_heads.
      'model.from_hf',
      'model.n_kv_heads',
      'model.head_dim',
      // Required where they apply (x-required-when: llama and qwen3; rope_type llama3), unused elsewhere.
      'model.intermediate_size',
      ...['factor', 'low_freq_factor', 'high_freq_factor', 'original_max_position_embeddings'].map(
        (k) => `model.rope_scaling.${k}`,
      ),
      ...[
        'partition',
        'account',
        'qos',
        'time_limit',
        'gpus_per_node',
        'cpus_per_task',
        'job_name',
        'extra_directives',
      ].map((k) => `launch.slurm.${k}`),
    ]);
    const sections: Record<string, string> = {
      ModelConfig: 'model',
      RopeScaling: 'model.rope_scaling',
      DataConfig: 'data',
      TrainingConfig: 'training',
      FsdpConfig: 'fsdp',
      MixedPrecisionConfig: 'mixed_precision',
      LossScaleConfig: 'mixed_precision.loss_scale',
      ActivationCheckpointingConfig: 'activation_checkpointing',
      CheckpointingConfig: 'checkpointing',
      StabilityConfig: 'stability',
      LoggingConfig: 'logging',
      LaunchConfig: 'launch',
      SlurmLaunch: 'launch.slurm',
      DebugConfig: 'debug',
    };
    const check = (
      prefix: string,
      def: { properties?: Record<string, Record<string, unknown>>; required?: string[] },
    ) => {
      for (const [key, prop] of Object.entries(def.properties ?? {})) {
        const name = `${prefix}.${key}`;
        const target = prop.$ref ? defs[String(prop.$ref).replace('#/definitions/', '')] : prop;
        const description = prop.description ?? (target as { description?: string }).description;
        if (!description) missing.push(`${name}: no description`);
        const required = def.required?.includes(key) ?? false;
        const isSection = !!(target as { properties?: object }).properties;
        if (!required && !isSection && prop.default === undefined && !absentMeans.has(name))
          missing.push(`${name}: no default`);
        if (key === 'inject_nan') check(name, prop as never);
      }
    };
    for (const [def, prefix] of Object.entries(sections)) check(prefix, defs[def]);
    assert.deepEqual(missing, []);
  });
});
