// `fsdp-train` as a person runs it: config errors named by file, line and key; the memory plan;
// a run whose every metrics line follows the protocol and whose run.json ends "completed"; a
// SIGTERM that stops the run after the current step with a checkpoint.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eventsOf, readRun, smallConfig, startTrain, tempDir, train, writeConfig } from './train-runs';

describe('fsdp-train: the command line', function () {
  this.timeout(120_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('cli')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('rejects a schema error with the file, line and key, exit code 2', async () => {
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'model:\n  d_model: 32\n  n_layers: 2\n  n_heads: 2\n  vocab_size: 256\n  max_seq_len: 32\ndata:\n  train: x.tok\ntraining:\n  batch_size_per_gpu: 4\n  max_steps: 5\n  learning_rate: 0.001\nfsdp:\n  sharding_strategy: FULL_SHRAD\n',
    );
    const r = await train([file, '--run-dir', path.join(dir, 'run')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /bad\.yaml:14:\d+ .*fsdp\.sharding_strategy.*FULL_SHRAD/);
  });

  it('rejects what only the runtime can check, naming the key, exit code 2', async () => {
    const file = writeConfig(dir, smallConfig());
    const r = await train([file, '--set', 'model.n_heads=3', '--run-dir', path.join(dir, 'run')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /model\.n_heads: 3 does not divide model\.d_model \(32\)/);
  });

  it('prints the memory plan with --plan', async () => {
    const r = await train([writeConfig(dir, smallConfig()), '--plan']);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as { params: number; n_params: number; total: number };
    assert.equal(plan.params, 4 * plan.n_params);
    assert.ok(plan.total > plan.params);
  });

  it('runs to completion: protocol-valid events, run.json completed, final checkpoint and eval', async () => {
    const runDir = path.join(dir, 'run');
    const r = await train([writeConfig(dir, smallConfig({ logging: { eval_every_n_steps: 6 } })), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const { events, problems, manifest } = await readRun(runDir);
    assert.deepEqual(problems, []);
    assert.equal(events[0].type, 'run_start');
    assert.deepEqual(
      eventsOf(events, 'step').map((e) => e.step),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    );
    assert.deepEqual(
      eventsOf(events, 'eval').map((e) => e.step),
      [6, 12],
    );
    assert.deepEqual(
      eventsOf(events, 'checkpoint').map((e) => e.step),
      [12],
    );
    assert.equal(events.at(-1)?.type, 'run_end');
    assert.equal(manifest.status, 'completed');
    assert.equal(manifest.step, 12);
    // Every line of stdout is the same event stream.
    assert.equal(r.stdout.trim().split('\n').length, events.length);
  });

  it('saves checkpoints by time with checkpointing.save_every_minutes', async () => {
    const runDir = path.join(dir, 'run');
    // 0.0001 minutes is 6 ms: more than one step of this model takes, so nearly every step saves.
    const config = writeConfig(
      dir,
      smallConfig({ checkpointing: { save_every_minutes: 0.0001, save_final: false, keep_last_n: 2 } }),
    );
    const r = await train([config, '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const saved = eventsOf((await readRun(runDir)).events, 'checkpoint');
    assert.ok(saved.length >= 3, `only ${saved.length} checkpoints in 12 steps`);
    assert.ok(saved.every((c, i) => i === 0 || c.step > saved[i - 1].step));
  });

  it('stops after the current step on SIGTERM, saving a checkpoint, exit code 143', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 100000 }, checkpointing: { save_every_n_steps: 0 } }),
    );
    let sent = false;
    const { done } = startTrain([config, '--run-dir', runDir], (line, child) => {
      if (!sent && line.includes('"type":"step"') && line.includes('"step":3,')) {
        sent = true;
        child.kill('SIGTERM');
      }
    });
    const r = await done;
    assert.equal(r.code, 143, r.stderr);
    const { events, manifest } = await readRun(runDir);
    const end = eventsOf(events, 'run_end')[0];
    assert.equal(end.status, 'stopped');
    assert.equal(eventsOf(events, 'checkpoint').at(-1)?.step, end.step);
    assert.equal(manifest.status, 'stopped');
  });
});
