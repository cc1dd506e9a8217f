import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { CompareCharts } from '../../core/runs/compare-charts';
import { configDifferences } from '../../core/runs/config-diff';
import { RunHistory } from '../../core/runs/run-history';

const plan = { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: 0 };

function run(steps: number, t0: number, lr: number, evalEvery = 0): RunHistory {
  const h = new RunHistory();
  h.apply({
    v: 1,
    type: 'run_start',
    time: t0,
    run_id: 'r',
    config: { training: { learning_rate: lr } },
    world: { size: 1, ranks: [] },
    memory_plan: plan,
  });
  for (let s = 1; s <= steps; s++) {
    h.apply({
      v: 1,
      type: 'step',
      time: t0 + s,
      step: s,
      loss: 5 - s / 100,
      lr: lr * s,
      grad_norm: 1,
      tokens_per_s: 1000 * lr,
      step_ms: 1,
      mem_peak: 1,
    } as MetricsEvent);
    if (evalEvery && s % evalEvery === 0) h.apply({ v: 1, type: 'eval', time: t0 + s, step: s, val_loss: 4 - s / 100 });
  }
  return h;
}

describe('compare view', () => {
  it('charts loss, validation loss, learning rate, gradient norm and throughput, one line per run', () => {
    const charts = new CompareCharts([
      { label: 'a', history: run(40, 1000, 1e-3, 10) },
      { label: 'b', history: run(80, 5000, 3e-3) },
    ]);
    const { charts: frames } = charts.build({ range: null, width: 400, smoothing: 0, xAxis: 'step' });
    assert.deepEqual(
      frames.map((c) => c.id),
      ['loss', 'val_loss', 'lr', 'grad_norm', 'tokens_per_s'],
    );
    for (const c of frames)
      assert.deepEqual(
        c.series.map((s) => s.label),
        ['a', 'b'],
        c.id,
      );
    const val = frames.find((c) => c.id === 'val_loss')!;
    assert.deepEqual(val.series[0].points.x, [10, 20, 30, 40]);
    assert.deepEqual(val.series[1].points.x, [], 'run b has no evaluation');
    assert.deepEqual(
      frames.find((c) => c.id === 'tokens_per_s')!.series.map((s) => s.points.y[0]),
      [1, 3],
    );
  });

  it("smooths the measured metrics, not the schedule, and counts elapsed time from each run's own start", () => {
    const charts = new CompareCharts([
      { label: 'a', history: run(40, 1000, 1e-3) },
      { label: 'b', history: run(40, 9000, 2e-3) },
    ]);
    const { charts: frames, extent } = charts.build({ range: null, width: 400, smoothing: 0.6, xAxis: 'elapsed' });
    const loss = frames.find((c) => c.id === 'loss')!;
    assert.deepEqual(loss.series[0].points.x.slice(0, 2), [1, 2], 'a starts at 0 s');
    assert.deepEqual(loss.series[1].points.x.slice(0, 2), [1, 2], 'and so does b, eight thousand seconds later');
    assert.deepEqual(extent, { min: 1, max: 40 });
    assert.notEqual(loss.series[0].points.y[5], 5 - 6 / 100, 'loss is smoothed');
    assert.equal(frames.find((c) => c.id === 'lr')!.series[1].points.y[5], 2e-3 * 6, 'lr is as set');
  });

  it('lists the config values that differ, and only those', () => {
    const diff = configDifferences([
      { model: { d_model: 64, n_layers: 2 }, training: { learning_rate: 1e-3, betas: [0.9, 0.95] }, name: 'a' },
      {
        model: { d_model: 64, n_layers: 4 },
        training: { learning_rate: 3e-3, betas: [0.9, 0.95], max_grad_norm: 1 },
        name: 'a',
      },
    ]);
    assert.deepEqual(diff, [
      { key: 'model.n_layers', values: ['2', '4'] },
      { key: 'training.learning_rate', values: ['0.001', '0.003'] },
      { key: 'training.max_grad_norm', values: [undefined, '1'] },
    ]);
    assert.deepEqual(configDifferences([{ a: 1 }, { a: 1 }]), []);
  });
});
