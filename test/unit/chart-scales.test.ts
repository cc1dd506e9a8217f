import assert from 'node:assert/strict';
import { clippedRange, DURATION_INCREMENTS, formatElapsedTick, forLogAxis, STEP_INCREMENTS } from '../../core/runs/chart-scales';

describe('chart scales', () => {
  it('clipping outliers keeps the curve in view when one spike would flatten it', () => {
    // A loss falling from 5 to 2 over 1,000 points with one spike to 80.
    const loss = Array.from({ length: 1000 }, (_, i) => 2 + 3 * Math.exp(-i / 200));
    loss[600] = 80;
    const r = clippedRange([loss])!;
    assert.ok(r.max < 7, `the spike is left out: max ${r.max}`);
    assert.ok(r.max >= 4.5, `the curve's early, higher part stays in view: max ${r.max}`);
    assert.ok(r.min <= 2.03 && r.min > 1.5, `min ${r.min}`);
  });

  it('never widens past the data, and leaves small series to the default range', () => {
    const flat = Array.from({ length: 100 }, (_, i) => 10 + (i % 2) * 0.01);
    const r = clippedRange([flat])!;
    assert.ok(r.min >= 9.99 && r.max <= 10.02, JSON.stringify(r));
    assert.equal(clippedRange([[1, 2, 3]]), undefined);
  });

  it('clips in log space on a log axis, over positive values only', () => {
    const lr = Array.from({ length: 200 }, (_, i) => 1e-5 * 10 ** (i / 100));
    lr[50] = 0;
    lr[120] = 1e3;
    const r = clippedRange([lr], true)!;
    assert.ok(r.min > 0 && r.min <= 1.1e-5, `min ${r.min}`);
    assert.ok(r.max < 0.1, `the outlier at 1e3 is left out: ${r.max}`);
    assert.deepEqual(forLogAxis([0, -1, 2, null, 3]), [null, null, 2, null, 3]);
  });

  it('ticks a step axis at whole steps only, and an elapsed axis at round durations', () => {
    assert.ok(STEP_INCREMENTS.every((v) => Number.isInteger(v) && v >= 1));
    assert.deepEqual(STEP_INCREMENTS.slice(0, 6), [1, 2, 5, 10, 20, 50]);
    assert.ok(DURATION_INCREMENTS.includes(60) && DURATION_INCREMENTS.includes(3600));
    assert.deepEqual([5, 75, 3725, 200_000].map(formatElapsedTick), ['5 s', '1:15', '1:02:05', '2 d 7 h']);
  });
});
