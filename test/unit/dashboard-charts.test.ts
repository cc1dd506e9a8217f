import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { DashboardCharts } from '../../core/runs/dashboard-charts';
import { RunHistory } from '../../core/runs/run-history';

function history(n: number, ranks = 1): RunHistory {
  const h = new RunHistory();
  for (let s = 1; s <= n; s++) {
    for (let r = 0; r < ranks; r++) {
      h.apply({ v: 1, type: 'step', time: s, step: s, loss: 10 / s, lr: 1e-3, grad_norm: 1, tokens_per_s: 100, step_ms: 5, mem_peak: 1000 * (r + 1), ...(ranks > 1 ? { rank: r } : {}) } as MetricsEvent);
    }
    if (s % 100 === 0) h.apply({ v: 1, type: 'checkpoint', time: s, step: s, path: `c${s}`, bytes: 1 });
    if (s % 250 === 0) h.apply({ v: 1, type: 'eval', time: s, step: s, val_loss: 5 / s });
  }
  return h;
}

describe('DashboardCharts', () => {
  it('gives each chart its series downsampled to the width, the EMA and validation loss on the loss chart', () => {
    const { charts, totalPoints, extent } = new DashboardCharts(history(100_000)).build({ range: null, width: 500, smoothing: 0.9 });
    assert.equal(totalPoints, 100_000);
    assert.deepEqual(extent, { min: 1, max: 100_000 });
    const loss = charts.find((c) => c.id === 'loss')!;
    assert.deepEqual(loss.series.map((s) => s.label), ['loss', 'loss (EMA 0.90)', 'val loss']);
    assert.ok(loss.series[0].points.x.length <= 2000, `${loss.series[0].points.x.length} points for 500 px`);
    assert.equal(loss.series[2].sparse, true);
    assert.equal(loss.series[2].points.x.length, 400, 'validation points are few and all sent');
    assert.ok(!charts.some((c) => c.id === 'mfu'), 'no MFU chart when the run reports none');
  });

  it('sends only the markers and points of the zoomed range', () => {
    const { charts, markers } = new DashboardCharts(history(1000)).build({ range: { min: 250, max: 450 }, width: 800, smoothing: 0 });
    assert.deepEqual(markers.map((m) => m.step), [300, 400]);
    const loss = charts.find((c) => c.id === 'loss')!;
    assert.deepEqual(loss.series.map((s) => s.label), ['loss', 'val loss']);
    assert.equal(loss.series[0].points.x[0], 249);
    assert.equal(loss.series[0].points.x.at(-1), 451);
  });

  it('draws memory per rank for multi-rank runs', () => {
    const { charts } = new DashboardCharts(history(10, 3)).build({ range: null, width: 300, smoothing: 0 });
    const memory = charts.find((c) => c.id === 'memory')!;
    assert.equal(memory.title, 'Peak memory per rank');
    assert.deepEqual(memory.series.map((s) => s.points.y[0]), [1000, 2000, 3000]);
  });
});
