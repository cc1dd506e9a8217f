import assert from 'node:assert/strict';
import {
  BYTE_INCREMENTS,
  clippedRange,
  DURATION_INCREMENTS,
  formatElapsedTick,
  forLogAxis,
  STEP_INCREMENTS,
  tickLabels,
} from '../../core/runs/chart-scales';

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

describe('tick labels', () => {
  it('use as many digits as the tick step needs, so neighbouring ticks never read the same', () => {
    assert.deepEqual(tickLabels('per_s', [1000, 1002, 1004, 1006], 2), ['1000', '1002', '1004', '1006']);
    assert.deepEqual(tickLabels('per_s', [12000, 12500, 13000], 500), ['12.0k', '12.5k', '13.0k']);
    assert.deepEqual(tickLabels('number', [2.5, 5, 7.5, 10], 2.5), ['2.5', '5.0', '7.5', '10.0']);
    assert.deepEqual(tickLabels('number', [0, 2.5e-4, 5e-4, 7.5e-4, 1e-3], 2.5e-4), [
      '0',
      '2.5e-4',
      '5e-4',
      '7.5e-4',
      '1e-3',
    ]);
    assert.deepEqual(tickLabels('number', [0, 2e-5, 4e-5], 2e-5), ['0', '2e-5', '4e-5']);
    assert.deepEqual(tickLabels('ratio', [0.3, 0.305, 0.31], 0.005), ['30.0%', '30.5%', '31.0%']);
    assert.deepEqual(tickLabels('bytes', [32 * 2 ** 20, 64 * 2 ** 20, 96 * 2 ** 20], 32 * 2 ** 20), [
      '32 MiB',
      '64 MiB',
      '96 MiB',
    ]);
    assert.deepEqual(tickLabels('bytes', [1.5 * 2 ** 30, 2 * 2 ** 30], 2 ** 29), ['1.5 GiB', '2.0 GiB']);
    assert.ok(BYTE_INCREMENTS.includes(64 * 2 ** 20));
  });
});
