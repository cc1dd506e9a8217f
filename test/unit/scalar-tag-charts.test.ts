import assert from 'node:assert/strict';
import { RunHistory } from '../../core/runs/run-history';
import { CompareCharts } from '../../core/runs/compare-charts';
import { buildScalarTags, MAX_TAG_CHARTS } from '../../core/runs/scalar-tag-charts';

describe('the dashboard\'s "all scalars" section', () => {
  it('groups every tag by prefix; the usual ones say which chart draws them, the others get points', () => {
    const h = new RunHistory();
    for (let s = 1; s <= 200; s++) {
      h.applyScalar('train/loss', s, 3 - s / 100, s);
      h.applyScalar('train/learning_rate', s, 1e-3, s);
      h.applyScalar('train/epoch', s, s / 50, s);
      h.applyScalar('perplexity', s, 20, s);
      if (s % 50 === 0) h.applyScalar('eval/loss', s, 2, s);
    }
    h.applyScalar('eval/accuracy', 200, Number.NaN, 200);
    const frame = buildScalarTags(h, { range: null, width: 100 }, new Set());
    assert.deepEqual(
      frame.groups.map((g) => [g.group, g.tags.map((t) => t.tag)]),
      [
        ['train', ['train/loss', 'train/learning_rate', 'train/epoch']],
        ['', ['perplexity']],
        ['eval', ['eval/loss', 'eval/accuracy']],
      ],
    );
    const train = frame.groups[0].tags;
    assert.equal(train[0].drawnIn, 'Loss');
    assert.equal(train[1].drawnIn, 'Learning rate');
    assert.equal(train[0].points, undefined, 'drawn once, in the loss chart');
    assert.equal(train[2].points!.x.length, 200, 'all points when few');
    assert.equal(frame.groups[2].tags[0].drawnIn, 'Loss', 'validation loss is drawn in the loss chart');
    assert.equal(frame.groups[2].tags[1].lastValue, null);
    // A zoomed view: the points of that range (and one beyond each edge).
    const zoomed = buildScalarTags(h, { range: { min: 100, max: 110 }, width: 100 }, new Set());
    assert.deepEqual(
      zoomed.groups[0].tags[2].points!.x,
      Array.from({ length: 13 }, (_, i) => 99 + i),
    );
  });

  it('closed groups and charts beyond the limit carry no points', () => {
    const h = new RunHistory();
    for (let i = 0; i < MAX_TAG_CHARTS + 5; i++) h.applyScalar(`layers/g${i}`, 1, i, 1);
    h.applyScalar('other/x', 1, 1, 1);
    const frame = buildScalarTags(h, { range: null, width: 100 }, new Set(['other']));
    assert.equal(frame.groups[0].tags.filter((t) => t.points).length, MAX_TAG_CHARTS);
    assert.equal(frame.omitted, 5);
    assert.equal(frame.groups[1].tags[0].points, undefined);
    assert.equal(frame.groups[1].tags[0].count, 1);
  });
});

describe('compare runs across native and PyTorch runs', () => {
  it('a native run and a TensorBoard-logged one side by side in every compared chart, on steps and on elapsed time', () => {
    const native = new RunHistory();
    native.apply({ v: 1, type: 'run_start', time: 1000, run_id: 'n', config: {}, world: { size: 1, ranks: [] } });
    for (let s = 1; s <= 30; s++)
      native.apply({
        v: 1,
        type: 'step',
        time: 1000 + s,
        step: s,
        loss: 4 - s / 10,
        lr: 1e-3,
        grad_norm: 1,
        tokens_per_s: 500,
        step_ms: 1,
        mem_peak: 1,
      });
    const pytorch = new RunHistory();
    for (let s = 10; s <= 30; s += 10) {
      pytorch.applyScalar('train/loss', s, 3 - s / 100, 5000 + s);
      pytorch.applyScalar('train/learning_rate', s, 2e-3, 5000 + s);
      pytorch.applyScalar('train/grad_norm', s, 0.5, 5000 + s);
      pytorch.applyScalar('eval/loss', s, 2.9, 5000 + s);
    }
    const compare = new CompareCharts([
      { label: 'native', history: native },
      { label: 'torch', history: pytorch },
    ]);
    const { charts } = compare.build({ range: null, width: 400, smoothing: 0, xAxis: 'step' });
    const chart = (id: string) => charts.find((c) => c.id === id)!;
    assert.deepEqual(
      chart('loss').series.map((s) => s.points.x.length),
      [30, 3],
    );
    assert.deepEqual(chart('loss').series[1].points.y, [2.9, 2.8, 2.7]);
    assert.deepEqual(chart('val_loss').series[1].points.x, [10, 20, 30]);
    assert.deepEqual(chart('lr').series[1].points.y, [2e-3, 2e-3, 2e-3]);
    const elapsed = compare.build({ range: null, width: 400, smoothing: 0, xAxis: 'elapsed' });
    const times = elapsed.charts.find((c) => c.id === 'loss')!.series[1].points.x;
    assert.equal(times.length, 3);
    assert.deepEqual(
      times.map((t) => t - times[0]),
      [0, 10, 20],
      'the TensorBoard wall times place its steps in time',
    );
  });
});
