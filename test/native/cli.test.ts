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
    // Every line of stdout is the same event stream: the runtime's events (its owner's own, the
    // attempt's processes, are the owner's to write, not the runtime's to print).
    assert.equal(r.stdout.trim().split('\n').length, events.filter((e) => e.type !== 'processes').length);
  });

  it('saves checkpoints by time with checkpointing.save_every_minutes', async () => {
    // Verdicts on the rule, not on how long a step takes here: 1e-9 minutes (60 ns) has passed by the end
    // of any step, so every step saves; 60 minutes never passes in a run of 12 steps, so only the run's end
    // saves (Checkpoints::final_due: a run with any checkpointing on saves its last step).
    const savedWith = async (minutes: number, name: string) => {
      const runDir = path.join(dir, name);
      const config = writeConfig(
        dir,
        smallConfig({ checkpointing: { save_every_minutes: minutes, save_final: false, keep_last_n: 2 } }),
      );
      const r = await train([config, '--run-dir', runDir]);
      assert.equal(r.code, 0, r.stderr);
      const { events } = await readRun(runDir);
      const steps = eventsOf(events, 'step').map((s) => s.step);
      return { steps, saved: eventsOf(events, 'checkpoint').map((c) => c.step) };
    };
    const often = await savedWith(1e-9, 'often');
    assert.ok(often.steps.length >= 3, `only ${often.steps.length} steps`);
    assert.deepEqual(often.saved, often.steps, 'every step saves when the interval is 60 ns');
    const never = await savedWith(60, 'never');
    assert.deepEqual(never.saved, [never.steps.at(-1)], 'no step saves by the clock before 60 minutes have passed');
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
