// NaN/Inf diagnostics: a NaN planted (debug.inject_nan) in each phase is located at the right
// layer and op (backward: the parameter whose gradient went first), with a dump; each
// stability.on_nan policy does what it says; loss spikes are reported and can be skipped.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { AnomalyEvent } from '../../core/protocol/metrics';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

describe('native runtime: NaN diagnostics and stability policies', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = tempDir('nan')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function runWith(name: string, extra: Record<string, Record<string, unknown>>) {
    const runDir = path.join(dir, name);
    const r = await train([writeConfig(dir, smallConfig(extra), `${name}.json`), '--run-dir', runDir]);
    return { r, runDir, ...(await readRun(runDir)) };
  }

  const located: Array<[string, Record<string, unknown>, Partial<AnomalyEvent['where']>]> = [
    [
      'forward',
      { step: 4, layer: 1, phase: 'forward', op: 'attn.softmax' },
      { phase: 'forward', layer: 1, op: 'attn.softmax' },
    ],
    [
      'forward, first op',
      { step: 2, layer: 0, phase: 'forward', op: 'ln1' },
      { phase: 'forward', layer: 0, op: 'ln1' },
    ],
    [
      'backward',
      { step: 3, layer: 0, phase: 'backward', op: 'mlp.fc2' },
      { phase: 'backward', layer: 0, op: 'mlp.fc2', param: 'blocks.0.mlp.fc2.weight' },
    ],
    [
      'backward, attention',
      { step: 3, layer: 1, phase: 'backward', op: 'attn.softmax' },
      { phase: 'backward', layer: 1, op: 'attn.softmax', param: 'blocks.1.attn.qkv.weight' },
    ],
    [
      'optimizer',
      { step: 5, layer: 1, phase: 'optimizer', op: 'attn.proj' },
      { phase: 'optimizer', layer: 1, op: 'attn.proj', param: 'blocks.1.attn.proj.weight' },
    ],
  ];
  for (const [name, inject, where] of located) {
    it(`locates a NaN planted in ${name} (${inject.op} of layer ${inject.layer}) and stops`, async () => {
      const run = await runWith(`stop-${name.replace(/\W+/g, '-')}`, { debug: { inject_nan: inject } });
      assert.equal(run.r.code, 1, run.r.stderr);
      const [anomaly] = eventsOf(run.events, 'anomaly');
      assert.ok(anomaly, 'no anomaly event');
      assert.equal(anomaly.step, inject.step);
      assert.equal(anomaly.kind, 'nan');
      assert.equal(anomaly.action, 'stop');
      for (const [k, v] of Object.entries(where)) assert.equal(anomaly.where[k as keyof typeof where], v, `where.${k}`);
      const end = eventsOf(run.events, 'run_end')[0];
      assert.equal(end.status, 'failed');
      assert.equal(run.manifest.status, 'failed');
      // The dump: the step, the place, the batch's token ids, per-op statistics.
      assert.ok(anomaly.dump && existsSync(path.join(run.runDir, anomaly.dump)), `dump ${anomaly.dump}`);
      const dump = JSON.parse(readFileSync(path.join(run.runDir, anomaly.dump!), 'utf8'));
      assert.equal(dump.step, inject.step);
      assert.deepEqual(dump.where, anomaly.where);
      assert.ok(dump.stats.length > 0);
      if (inject.phase !== 'optimizer') {
        assert.equal(dump.tokens.length, 1);
        assert.equal(dump.tokens[0].length, 4 * 32);
        assert.ok(dump.stats.some((s: { nonfinite: number }) => s.nonfinite > 0));
      }
    });
  }

  it("skip: drops the step's update and trains on", async () => {
    const run = await runWith('skip', {
      stability: { on_nan: 'skip' },
      debug: { inject_nan: { step: 4, layer: 1, phase: 'forward' } },
    });
    assert.equal(run.r.code, 0, run.r.stderr);
    assert.equal(eventsOf(run.events, 'anomaly')[0].action, 'skip');
    const steps = eventsOf(run.events, 'step');
    const fourth = steps.find((s) => s.step === 4)!;
    assert.equal(fourth.skipped, true);
    assert.equal(fourth.loss, null);
    assert.deepEqual(
      steps.map((s) => s.step),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    );
    assert.ok(steps.filter((s) => s.step > 4).every((s) => s.loss !== null && !s.skipped));
    assert.equal(run.manifest.status, 'completed');
  });

  it('rollback: reloads the last good checkpoint, skips the batch, halves the rate, and finishes', async () => {
    const reference = await runWith('no-nan', { checkpointing: { save_every_n_steps: 2 } });
    const run = await runWith('rollback', {
      checkpointing: { save_every_n_steps: 2 },
      stability: { on_nan: 'rollback', rollback_lr_factor: 0.5 },
      debug: { inject_nan: { step: 5, layer: 0, phase: 'backward' } },
    });
    assert.equal(run.r.code, 0, run.r.stderr);
    const anomaly = eventsOf(run.events, 'anomaly')[0];
    assert.equal(anomaly.action, 'rollback');
    assert.equal(anomaly.rollback_to, 4);
    const restart = eventsOf(run.events, 'run_start')[1];
    assert.equal(restart.start_step, 4);
    assert.match(restart.resumed_from ?? '', /step-00000004$/);
    const after = eventsOf(run.events, 'step').filter((s) => run.events.indexOf(s) > run.events.indexOf(restart));
    assert.deepEqual(
      after.map((s) => s.step),
      [5, 6, 7, 8, 9, 10, 11, 12],
    );
    const lrOf = (events: typeof after, step: number) => events.find((s) => s.step === step)!.lr;
    assert.equal(lrOf(after, 5), lrOf(eventsOf(reference.events, 'step'), 5) * 0.5);
    assert.ok(after.every((s) => s.loss !== null));
    assert.equal(run.manifest.status, 'completed');
  });

  it('rollback: stops once stability.max_rollbacks is reached', async () => {
    const run = await runWith('rollback-limit', {
      checkpointing: { save_every_n_steps: 2 },
      stability: { on_nan: 'rollback', max_rollbacks: 1 },
      debug: { inject_nan: { step: 3, layer: 1, phase: 'forward', once: false } },
    });
    assert.equal(run.r.code, 1);
    assert.deepEqual(
      eventsOf(run.events, 'anomaly').map((a) => a.action),
      ['rollback', 'stop'],
    );
    assert.match(eventsOf(run.events, 'run_end')[0].reason ?? '', /max_rollbacks/);
  });

  it('reports loss and gradient-norm spikes, and skips them when asked', async () => {
    const run = await runWith('spikes', { stability: { spike_zscore: 0.5, spike_window: 3, on_spike: 'skip' } });
    assert.equal(run.r.code, 0, run.r.stderr);
    const spikes = eventsOf(run.events, 'anomaly').filter((a) => a.kind === 'spike');
    assert.ok(spikes.length > 0, 'no spike at z > 0.5 over a window of 3');
    for (const s of spikes) {
      assert.equal(s.action, 'skip');
      assert.ok(s.zscore! > 0.5);
      assert.ok(s.metric === 'loss' || s.metric === 'grad_norm');
      assert.equal(eventsOf(run.events, 'step').find((e) => e.step === s.step)!.skipped, true);
    }
  });
});
