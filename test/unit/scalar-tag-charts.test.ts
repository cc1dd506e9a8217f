import assert from 'node:assert/strict';
import { RunHistory } from '../../core/runs/run-history';
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
    assert.deepEqual(frame.groups.map((g) => [g.group, g.tags.map((t) => t.tag)]), [['train', ['train/loss', 'train/learning_rate', 'train/epoch']], ['', ['perplexity']], ['eval', ['eval/loss', 'eval/accuracy']]]);
    const train = frame.groups[0].tags;
    assert.equal(train[0].drawnIn, 'Loss');
    assert.equal(train[1].drawnIn, 'Learning rate');
    assert.equal(train[0].points, undefined, 'drawn once, in the loss chart');
    assert.equal(train[2].points!.x.length, 200, 'all points when few');
    assert.equal(frame.groups[2].tags[0].drawnIn, 'Loss', 'validation loss is drawn in the loss chart');
    assert.equal(frame.groups[2].tags[1].lastValue, null);
    // A zoomed view: the points of that range (and one beyond each edge).
    const zoomed = buildScalarTags(h, { range: { min: 100, max: 110 }, width: 100 }, new Set());
    assert.deepEqual(zoomed.groups[0].tags[2].points!.x, Array.from({ length: 13 }, (_, i) => 99 + i));
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
