import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { RunHistory, describeAnomaly } from '../../core/runs/run-history';
import { SmoothedSeries } from '../../core/runs/smoothing';
import { StepSeries } from '../../core/runs/step-series';

const plan = { params: 1, grads: 1, optimizer: 2, activations: 3, workspace: 0, comm: 0, other: 0, total: 7 };
const start = (startStep?: number): MetricsEvent => ({
  v: 1,
  type: 'run_start',
  time: 100,
  run_id: 'r',
  config: { training: { max_steps: 100 } },
  world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu' }] },
  memory_plan: plan,
  ...(startStep !== undefined ? { start_step: startStep } : {}),
});
const step = (s: number, loss: number | null = 5 - s / 10, extra: object = {}): MetricsEvent =>
  ({
    v: 1,
    type: 'step',
    time: 100 + s,
    step: s,
    loss,
    lr: 1e-3,
    grad_norm: 1,
    tokens_per_s: 10,
    step_ms: 1000,
    mem_peak: 1000 + s,
    ...extra,
  }) as MetricsEvent;
const steps = (h: RunHistory) => [...h.step.loss.steps];

describe('RunHistory', () => {
  it('keeps every step once in order', () => {
    const h = new RunHistory();
    [start(), step(1), step(2), step(3)].forEach((e) => h.apply(e));
    assert.deepEqual(steps(h), [1, 2, 3]);
    assert.equal(h.lastStep, 3);
    assert.equal(h.step.loss.lastValue, 5 - 0.3);
  });

  it('after a resume from step S, later events of steps after S replace the lost ones', () => {
    const h = new RunHistory();
    [
      start(),
      step(1),
      step(2),
      { v: 1, type: 'checkpoint', time: 1, step: 2, path: 'c2', bytes: 1 },
      step(3),
      step(4),
      { v: 1, type: 'checkpoint', time: 1, step: 4, path: 'c4', bytes: 1 },
      step(5),
    ].forEach((e) => h.apply(e as MetricsEvent));
    h.apply(start(2));
    assert.deepEqual(steps(h), [1, 2], 'steps after the checkpoint are void until repeated');
    assert.deepEqual(
      h.markers.map((m) => m.step),
      [2],
      'the checkpoint of lost work is gone',
    );
    [step(3, 9), step(4, 9), step(5, 9), step(6, 9)].forEach((e) => h.apply(e));
    assert.deepEqual(steps(h), [1, 2, 3, 4, 5, 6]);
    assert.equal(h.step.loss.values[2], 9, 'step 3 holds the value of the resumed run');
    assert.deepEqual([...h.memoryByRank.get(0)!.steps], [1, 2, 3, 4, 5, 6]);
  });

  it('a repeated step without a run_start (rollback) replaces the timeline from there, keeping the NaN marker', () => {
    const h = new RunHistory();
    [start(), step(1), step(2), step(3), step(4, null)].forEach((e) => h.apply(e));
    h.apply({
      v: 1,
      type: 'anomaly',
      time: 1,
      step: 4,
      kind: 'nan',
      where: { phase: 'backward', layer: 2, op: 'mlp.gelu' },
      action: 'rollback',
      rollback_to: 2,
    });
    [step(3, 1), step(4, 1), step(5, 1)].forEach((e) => h.apply(e));
    assert.deepEqual(steps(h), [1, 2, 3, 4, 5]);
    assert.equal(h.step.loss.values[3], 1);
    assert.deepEqual(
      h.markers.map((m) => `${m.step}:${m.kind}`),
      ['4:nan'],
    );
    assert.match(h.markers[0].label, /NaN in backward, layer 2 \(mlp\.gelu\); rolled back to step 2/);
  });

  it('takes step metrics from rank-less events and memory from every rank', () => {
    const h = new RunHistory();
    h.apply(start());
    for (const s of [1, 2]) {
      h.apply(step(s, 3));
      h.apply(step(s, 99, { rank: 0, mem_peak: 10 }));
      h.apply(step(s, 99, { rank: 1, mem_peak: 20 }));
    }
    assert.deepEqual(steps(h), [1, 2]);
    assert.deepEqual([...h.step.loss.values], [3, 3], 'rank 0 does not override the whole-run loss');
    assert.deepEqual([...h.memoryByRank.get(1)!.values], [20, 20]);
    assert.deepEqual([...h.memoryByRank.get(0)!.values], [10, 10]);
  });

  it('marks skipped steps, keeps non-finite loss as NaN, and estimates the time left', () => {
    const h = new RunHistory();
    [start(), step(1), step(2, null, { skipped: true }), step(3)].forEach((e) => h.apply(e));
    assert.ok(Number.isNaN(h.step.loss.values[1]));
    assert.deepEqual(
      h.markers.map((m) => `${m.step}:${m.kind}`),
      ['2:skipped'],
    );
    assert.equal(h.stepsPerSecond(), 1);
    assert.equal(h.etaSeconds(100), 97);
    h.apply({ v: 1, type: 'run_end', time: 200, status: 'completed', step: 3 });
    assert.equal(h.etaSeconds(100), undefined);
  });

  it('describes a spike with its z-score', () => {
    assert.equal(
      describeAnomaly({
        v: 1,
        type: 'anomaly',
        time: 1,
        step: 9,
        kind: 'spike',
        where: { phase: 'loss' },
        action: 'report',
        metric: 'loss',
        zscore: 7.25,
      }),
      'loss spike (z=7.3); reported',
    );
  });
});

describe('StepSeries', () => {
  it('grows past its initial capacity and replaces instead of duplicating', () => {
    const s = new StepSeries();
    for (let i = 1; i <= 1000; i++) s.set(i, i);
    s.set(500, -1);
    assert.equal(s.length, 500);
    assert.equal(s.lastValue, -1);
    assert.equal(s.rewrites, 1);
  });
});

describe('SmoothedSeries', () => {
  it('is debiased (the first value is the first point) and follows appends and rewinds', () => {
    const s = new StepSeries();
    [2, 4].forEach((v, i) => s.set(i + 1, v));
    const ema = new SmoothedSeries(s);
    assert.deepEqual([...ema.values(0.5)], [2, (0.25 * 2 + 0.5 * 4) / 0.75]);
    s.set(3, Number.NaN);
    s.set(4, 4);
    const v = ema.values(0.5);
    assert.ok(Number.isNaN(v[2]));
    assert.ok(Math.abs(v[3] - ((0.25 * 2 + 0.5 * 4) * 0.5 + 0.5 * 4) / 0.875) < 1e-12);
    s.set(2, 10); // rewind: step 2 replaced
    assert.deepEqual([...ema.values(0.5)], [2, (0.25 * 2 + 0.5 * 10) / 0.75]);
    assert.deepEqual([...ema.values(0)], [2, 10], 'weight 0 is the raw line');
  });
});
