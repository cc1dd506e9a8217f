import assert from 'node:assert/strict';
import { downsampleManyToView, downsampleToView } from '../../core/runs/downsample';

describe('downsampleToView', () => {
  const n = 1_000_000;
  const xs = Float64Array.from({ length: n }, (_, i) => i + 1);
  const ys = Float64Array.from({ length: n }, (_, i) => Math.sin(i / 1000) + (i === 654_321 ? 50 : 0));

  it('returns every point when they fit, plus one neighbour outside each edge', () => {
    const r = downsampleToView(xs, ys, { min: 100, max: 110 }, 800);
    assert.deepEqual(
      r.x,
      Array.from({ length: 13 }, (_, i) => 99 + i),
    );
  });

  it('reduces a million points to at most four per column and keeps the extremes', () => {
    const r = downsampleToView(xs, ys, undefined, 1000);
    assert.ok(r.x.length <= 4000, `${r.x.length} points`);
    assert.ok(r.x.length > 2000);
    assert.equal(Math.max(...(r.y as number[])), ys[654_321], 'a one-point spike survives');
    assert.equal(r.x[0], 1);
    assert.equal(r.x[r.x.length - 1], n);
    for (let i = 1; i < r.x.length; i++) assert.ok(r.x[i] > r.x[i - 1], 'x increasing, no doubles');
  });

  it('keeps a non-finite value as a gap at every zoom', () => {
    const y2 = Float64Array.from(ys);
    y2[500_000] = Number.NaN;
    const r = downsampleToView(xs, y2, undefined, 300);
    assert.ok(r.y.includes(null));
    assert.ok(r.x.includes(500_001));
  });

  it('zooms to a range', () => {
    const r = downsampleToView(xs, ys, { min: 200_000, max: 300_000 }, 500);
    assert.ok(r.x[1] >= 200_000 && r.x[r.x.length - 2] <= 300_000);
    assert.ok(r.x.length <= 2002);
  });

  it('downsamples several series over the same steps as each alone would be', () => {
    const y2 = Float64Array.from(ys, (v, i) => (i % 1000 === 7 ? Number.NaN : -v));
    for (const range of [undefined, { min: 123_456.5, max: 123_999 }, { min: 10, max: 900_000 }]) {
      assert.deepEqual(downsampleManyToView(xs, [ys, y2], range, 777), [
        downsampleToView(xs, ys, range, 777),
        downsampleToView(xs, y2, range, 777),
      ]);
    }
  });
});
