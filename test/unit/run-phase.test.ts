import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { metricsCsv } from '../../core/runs/metrics-csv';
import { runPhase, tokensSeen } from '../../core/runs/run-phase';
import { RunHistory } from '../../core/runs/run-history';

const plan = { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: 0 };
const config = {
  training: { batch_size_per_gpu: 4, gradient_accumulation_steps: 2, max_steps: 100 },
  data: { seq_len: 128 },
  checkpointing: { save_every_n_steps: 50 },
};
const start = (time: number, extra: object = {}): MetricsEvent =>
  ({
    v: 1,
    type: 'run_start',
    time,
    run_id: 'r',
    config,
    world: { size: 2, ranks: [] },
    memory_plan: plan,
    n_params: 124_000_000,
    ...extra,
  }) as MetricsEvent;
const step = (s: number, time: number, extra: object = {}): MetricsEvent =>
  ({
    v: 1,
    type: 'step',
    time,
    step: s,
    loss: 3,
    lr: 1,
    grad_norm: 1,
    tokens_per_s: 2048,
    step_ms: 500,
    mem_peak: 1,
    ...extra,
  }) as MetricsEvent;
const every50 = (s: number) => s % 50 === 0;

describe('run phase and totals', () => {
  it('says what a live run is doing while no step comes: starting, the first step, a checkpoint save', () => {
    const h = new RunHistory();
    assert.deepEqual(runPhase(h, { live: true, launchedAt: 90, savesAfter: every50 }), {
      label: 'Starting the trainer',
      since: 90,
    });
    h.apply(start(100));
    assert.deepEqual(runPhase(h, { live: true, savesAfter: every50 }), {
      label: 'Running the first step',
      detail: 'model and data ready (124.00M parameters, 2 ranks)',
      since: 100,
    });
    h.apply(step(1, 108.6));
    assert.equal(runPhase(h, { live: true, savesAfter: every50 }), undefined, 'steps are coming');
    for (let s = 2; s <= 50; s++) h.apply(step(s, 108 + s));
    assert.deepEqual(runPhase(h, { live: true, savesAfter: every50 }), {
      label: 'Saving the checkpoint of step 50',
      since: 158,
    });
    h.apply({ v: 1, type: 'checkpoint', time: 164, step: 50, path: 'c50', bytes: 1.5e9 });
    assert.equal(runPhase(h, { live: true, savesAfter: every50 }), undefined, 'saved');
    assert.equal(
      runPhase(new RunHistory(), { live: false, savesAfter: every50 }),
      undefined,
      'a run that is not live is doing nothing',
    );
  });

  it("never claims a person's command is running its first step: it waits for one, saying what is read", () => {
    const h = new RunHistory();
    const command = { sources: 'what it prints (stdout and stderr) and fsdp_studio.log calls' };
    assert.equal(
      runPhase(h, { live: true, launchedAt: 90, savesAfter: () => false, command })?.label,
      'Starting the command',
    );
    h.apply({
      v: 1,
      type: 'run_start',
      time: 100,
      run_id: 'r',
      config: { command: ['python3', 'train.py'] },
      world: { size: 1, ranks: [] },
    } as MetricsEvent);
    assert.deepEqual(runPhase(h, { live: true, savesAfter: () => false, command }), {
      label: 'Waiting for the first step',
      detail: `the command is running; its metrics are read from ${command.sources}`,
      since: 100,
    });
    h.applyPrinted(0, [{ tag: 'printed/loss', value: 2.5, metric: 'loss' }], 104, {
      file: 'stdout',
      format: 'nanoGPT',
      counted: false,
    });
    assert.equal(runPhase(h, { live: true, savesAfter: () => false, command }), undefined, 'a printed step is a step');
    assert.equal(h.lastStepTime, 104);
  });

  it('a resumed run runs its first step again after its new run_start', () => {
    const h = new RunHistory();
    [start(100), step(1, 101), step(2, 102)].forEach((e) => h.apply(e));
    h.apply(start(200, { start_step: 2 }));
    assert.equal(runPhase(h, { live: true, savesAfter: () => false })?.label, 'Running the first step');
    assert.match(runPhase(h, { live: true, savesAfter: () => false })!.detail!, /^resumed at step 2; /);
  });

  it('elapsed time and the ETA count the run\'s running time, not the pause before "Continue training"', () => {
    const h = new RunHistory();
    // 10 steps, 1 s each; stopped at 111; continued 252 s later (an idle gap); 5 steps at 2 s each.
    h.apply(start(100));
    for (let s = 1; s <= 10; s++) h.apply(step(s, 100 + s));
    h.apply({ v: 1, type: 'run_end', time: 111, status: 'completed', step: 10 });
    assert.equal(h.activeSeconds(), 11);
    h.apply(start(363, { start_step: 10 }));
    assert.equal(h.runningSince, 363);
    assert.equal(h.activeBefore(), 11, 'the first start, without the gap');
    assert.equal(h.etaSeconds(100), undefined, 'no pace yet: the old steps are before the gap');
    for (let s = 11; s <= 15; s++) h.apply(step(s, 363 + 2 * (s - 10)));
    assert.equal(h.activeSeconds(375), 11 + 12);
    assert.equal(h.stepsPerSecond(), 0.5, "this start's pace, not one averaged across the gap");
    assert.equal(h.etaSeconds(100), 85 * 2);
    h.apply({ v: 1, type: 'run_end', time: 374, status: 'completed', step: 15 });
    assert.equal(h.runningSince, undefined);
    assert.equal(h.activeSeconds(), 11 + 11);
  });

  it('counts tokens seen from the global batch, or from throughput for a trainer that does not say', () => {
    const h = new RunHistory();
    [start(100), step(1, 101), step(2, 102), step(10, 110)].forEach((e) => h.apply(e));
    assert.equal(tokensSeen(h), 10 * 4 * 2 * 128 * 2);
    const other = new RunHistory();
    other.apply({ ...start(100), config: {} } as MetricsEvent);
    other.apply(step(20, 120));
    assert.equal(tokensSeen(other), 20 * 1024);
  });

  it('writes every metric as CSV, one row per step, validation loss and memory on their steps', () => {
    const h = new RunHistory();
    [
      start(100),
      step(1, 101, { mem_rss: 7 }),
      step(2, 102.5, { mem_rss: 8 }),
      { v: 1, type: 'eval', time: 103, step: 2, val_loss: 2.5 } as MetricsEvent,
      step(3, 104, { loss: null }),
    ].forEach((e) => h.apply(e));
    const lines = metricsCsv(h).trimEnd().split('\n');
    assert.equal(lines[0], 'step,time,elapsed_s,loss,lr,grad_norm,tokens_per_s,step_ms,val_loss,mem_peak,mem_rss');
    assert.equal(lines[1], '1,101.000,1.000,3,1,1,2048,500,,1,7');
    assert.equal(lines[2], '2,102.500,2.500,3,1,1,2048,500,2.5,1,8');
    assert.equal(lines[3], '3,104.000,4.000,NaN,1,1,2048,500,,1,');
    assert.equal(lines.length, 4);
  });
});
