// Every scalar tag of a run, whoever logged it, and the usual names recognised as the native
// charts' metrics, so runs of other trainers fill the same charts (and Compare runs) as native runs.
import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { RunHistory } from '../../core/runs/run-history';
import { NATIVE_TAGS, recogniseTag, tagGroup } from '../../core/runs/scalar-tags';

const step = (s: number, loss: number): MetricsEvent => ({
  v: 1,
  type: 'step',
  time: 1000 + s,
  step: s,
  loss,
  lr: 0.1,
  grad_norm: 1,
  tokens_per_s: 5,
  step_ms: 2,
  mem_peak: 7,
});

describe('scalar tags', () => {
  it('recognises the names the Hugging Face Trainer, Lightning, torchtitan and SummaryWriter scripts use', () => {
    const cases: Record<string, string | undefined> = {
      'train/loss': 'loss',
      loss: 'loss',
      train_loss: 'loss',
      'Loss/train': 'loss',
      training_loss: 'loss',
      'loss_metrics/global_avg_loss': 'loss',
      'eval/loss': 'val_loss',
      val_loss: 'val_loss',
      'Loss/val': 'val_loss',
      'validation/loss': 'val_loss',
      eval_loss: 'val_loss',
      'train/learning_rate': 'lr',
      lr: 'lr',
      'lr-AdamW': 'lr',
      'train/lr': 'lr',
      'train/grad_norm': 'grad_norm',
      grad_norm: 'grad_norm',
      gradient_norm: 'grad_norm',
      'throughput(tps)': 'tokens_per_s',
      'train/tokens_per_s': 'tokens_per_s',
      tokens_per_second: 'tokens_per_s',
      'train/epoch': undefined,
      'eval/accuracy': undefined,
      'train/samples_per_second': undefined,
      'memory/max_reserved(GiB)': undefined,
      lossy: undefined,
      'mfu(%)': undefined,
    };
    for (const [tag, metric] of Object.entries(cases)) assert.equal(recogniseTag(tag), metric, tag);
    for (const tag of Object.values(NATIVE_TAGS)) assert.ok(recogniseTag(tag), `native tag ${tag} is recognised`);
  });

  it('groups tags by their prefix, as TensorBoard does', () => {
    assert.equal(tagGroup('train/loss'), 'train');
    assert.equal(tagGroup('a/b/c'), 'a');
    assert.equal(tagGroup('loss'), '');
    assert.equal(tagGroup('/x'), '');
  });
});

describe('run history scalars', () => {
  it("native step events are tags too, sharing the charts' series (nothing stored twice)", () => {
    const h = new RunHistory();
    for (let s = 1; s <= 5; s++) h.apply(step(s, 10 - s));
    h.apply({ v: 1, type: 'eval', time: 2000, step: 5, val_loss: 4.5 });
    assert.deepEqual(
      h.scalars.tags().filter((t) => h.scalars.summary(t)),
      ['train/loss', 'train/lr', 'train/grad_norm', 'train/tokens_per_s', 'train/step_ms', 'eval/loss'],
    );
    assert.equal(h.scalars.get('train/loss')!.values, h.step.loss);
    assert.deepEqual(h.scalars.summary('train/loss'), {
      count: 5,
      first_step: 1,
      last_step: 5,
      last_value: 5,
      last_wall_time: 1005,
    });
    assert.deepEqual(h.scalars.summary('eval/loss'), {
      count: 1,
      first_step: 5,
      last_step: 5,
      last_value: 4.5,
      last_wall_time: 2000,
    });
  });

  it("a TensorBoard run's usual tags fill the native charts; other tags keep their own series", () => {
    const h = new RunHistory();
    for (let s = 1; s <= 4; s++) {
      h.applyScalar('train/loss', s * 10, 5 - s, 100 + s);
      h.applyScalar('train/learning_rate', s * 10, 0.01 * s, 100 + s);
      h.applyScalar('train/epoch', s * 10, s / 4, 100 + s);
    }
    h.applyScalar('eval/loss', 40, 1.5, 200);
    assert.deepEqual([...h.step.loss.steps], [10, 20, 30, 40]);
    assert.deepEqual([...h.step.lr.values], [0.01, 0.02, 0.03, 0.04]);
    assert.deepEqual([...h.step.time.values], [101, 102, 103, 104], "the loss's wall times are the step times");
    assert.deepEqual([...h.valLoss.values], [1.5]);
    assert.equal(h.tagOf('loss'), 'train/loss');
    assert.equal(h.lastStep, 40);
    assert.deepEqual(h.scalars.summary('train/epoch'), {
      count: 4,
      first_step: 10,
      last_step: 40,
      last_value: 1,
      last_wall_time: 104,
    });
  });

  it('the first tag that means a metric draws it; a second one stays a plain tag', () => {
    const h = new RunHistory();
    h.applyScalar('loss', 1, 3, 1);
    h.applyScalar('train/loss', 1, 9, 1);
    assert.equal(h.tagOf('loss'), 'loss');
    assert.deepEqual([...h.step.loss.values], [3]);
    assert.deepEqual(h.scalars.summary('train/loss')?.last_value, 9);
  });

  it('a step logged again replaces it and what followed (a resumed script); a NaN is kept as not finite', () => {
    const h = new RunHistory();
    for (let s = 1; s <= 10; s++) h.applyScalar('acc', s, s, s);
    for (let s = 6; s <= 8; s++) h.applyScalar('acc', s, 100 + s, 50 + s);
    h.applyScalar('acc', 9, null, 60);
    assert.deepEqual([...h.scalars.get('acc')!.values.steps], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(h.scalars.summary('acc')?.last_value, null);
    assert.equal(h.scalars.get('acc')!.values.values[7], 108);
  });

  it("the companion's scalars events fill the same tags; a run_start without start_step keeps the history", () => {
    const h = new RunHistory();
    const start: MetricsEvent = {
      v: 1,
      type: 'run_start',
      time: 1,
      run_id: 'r',
      config: {},
      world: { size: 2, ranks: [] },
    };
    h.apply(start);
    h.apply({
      v: 1,
      type: 'scalars',
      time: 2,
      step: 1,
      values: { loss: 2.5, 'train/tokens_per_s': 900, grad_norm: null },
    });
    h.apply({ v: 1, type: 'scalars', time: 3, step: 2, values: { loss: 2.0 } });
    h.apply(start);
    assert.deepEqual([...h.step.loss.values], [2.5, 2.0]);
    assert.deepEqual([...h.step.tokens_per_s.values], [900]);
    assert.ok(Number.isNaN(h.step.grad_norm.values[0]));
  });
});
