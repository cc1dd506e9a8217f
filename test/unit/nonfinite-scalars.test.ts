// NaN and Inf from every source a run has: the native step events, the companion's scalars events,
// TensorBoard values and printed lines all fill RunHistory.nonFinite (tag, first step, rank); the
// run's ending metric is said in the HF Trainer's terms when its logging_nan_inf_filter hides the
// loss; the NaN view lists what no located anomaly stands for, with the framework's own advice.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AnomalyEvent, MetricsEvent } from '../../core/protocol/metrics';
import { nonFiniteViews } from '../../core/runs/anomaly-report';
import { nonFiniteAtEnd } from '../../core/runs/nonfinite-scalars';
import { adviceContext, frameworkOf } from '../../core/runs/run-advice';
import { RunHistory } from '../../core/runs/run-history';
import { printedMetricsDecoder } from '../../runs/watch/decoders/printed/printed-metrics-decoder';
import { FORMAT_NAMES } from '../../runs/watch/decoders/printed/recognisers';

/** A history fed a fixture's printed output, as the watch feeds it. */
function printedHistory(name: string): RunHistory {
  const bytes = readFileSync(path.join(__dirname, '..', 'fixtures', 'printed', name));
  const h = new RunHistory();
  for (const e of printedMetricsDecoder()(0).push(bytes).entries)
    h.applyPrinted(
      e.step,
      e.values,
      1000 + e.step,
      { file: 'stdout', format: FORMAT_NAMES[e.format], counted: !!e.counted },
      e.rank,
    );
  return h;
}

const brief = (h: RunHistory) => h.nonFinite.list().map((n) => [n.tag, n.step, n.rank, n.kind, n.source]);

describe('non-finite scalars', () => {
  it("the HF Trainer's hidden NaN: grad_norm NaN beside a logged loss of 0 is said as logging_nan_inf_filter's doing", () => {
    const h = printedHistory('hf-trainer-nan.stdout.log');
    assert.deepEqual(brief(h), [['printed/grad_norm', 2, null, 'nan', 'printed']]);
    assert.equal(h.nonFiniteLossSince(), undefined, 'the loss itself is finite: 0');
    assert.deepEqual(nonFiniteAtEnd(h, true), {
      tag: 'printed/grad_norm',
      metric: 'grad_norm',
      step: 2,
      lossHidden: true,
      text: 'the loss is hidden by logging_nan_inf_filter; the gradient norm is NaN since step 2',
    });
    // Not known to be the Trainer's: the same facts without naming its filter.
    assert.equal(nonFiniteAtEnd(h)!.text, 'gradient norm NaN since step 2 (the logged loss is finite)');
    assert.deepEqual(
      h.markers.map((m) => [m.step, m.kind]),
      [[2, 'nan']],
    );
  });

  it("the NaN view's entry for it gives the Trainer's own arguments, logging_nan_inf_filter=False among them", () => {
    const h = printedHistory('hf-trainer-nan.stdout.log');
    const script = 'from transformers import (\n    AutoConfig,\n    Trainer,\n    TrainingArguments,\n)\n';
    const advice = adviceContext('command', { command: ['torchrun', '--nproc_per_node', '2', 'run_clm.py'] }, script);
    assert.equal(advice.framework, 'hf-trainer');
    const [view, ...rest] = nonFiniteViews(h.nonFinite.list(), h.anomalies, advice, nonFiniteAtEnd(h, true));
    assert.equal(rest.length, 0);
    assert.equal(view.summary, 'the loss is hidden by logging_nan_inf_filter; the gradient norm is NaN since step 2');
    assert.deepEqual(view.scalar, { tag: 'printed/grad_norm', source: "the script's printed output", value: 'NaN' });
    assert.equal(view.event.step, 2);
    const advised = view.fixes.map((f) => f.detail).join('\n');
    for (const arg of ['max_grad_norm', 'learning_rate', 'warmup_ratio', 'bf16=True', 'logging_nan_inf_filter=False'])
      assert.ok(advised.includes(arg), `advice names ${arg}:\n${advised}`);
    assert.ok(
      view.fixes.every((f) => f.action === undefined),
      'nothing edits a person’s script',
    );
  });

  it("build-nanogpt's printed nan: the loss and the norm from step 2, the run ends with its loss NaN", () => {
    const h = printedHistory('build-nanogpt-nan.stdout.log');
    assert.deepEqual(brief(h), [
      ['printed/loss', 2, null, 'nan', 'printed'],
      ['printed/norm', 2, null, 'nan', 'printed'],
    ]);
    assert.equal(nonFiniteAtEnd(h)!.text, 'loss NaN since step 2');
    const advice = adviceContext('command', { command: ['torchrun', 'train_gpt2.py'] }, 'import torch\n');
    const views = nonFiniteViews(h.nonFinite.list(), h.anomalies, advice, nonFiniteAtEnd(h));
    assert.deepEqual(
      views.map((v) => v.summary),
      ['printed/loss NaN from step 2', 'printed/norm NaN from step 2'],
    );
    assert.match(views[0].fixes.map((f) => f.detail).join(' '), /clip_grad_norm_/);
  });

  it('TensorBoard values, companion scalars and native steps: tag, first step and rank of each', () => {
    const h = new RunHistory();
    h.applyScalar('train/loss', 1, 2.5, 10, undefined, { source: 'tensorboard' });
    h.applyScalar('train/grad_norm', 1, Number.POSITIVE_INFINITY, 10, undefined, { source: 'tensorboard' });
    h.applyScalar('train/grad_norm', 2, Number.NaN, 11, undefined, { source: 'tensorboard' });
    h.applyScalar('train/grad_norm', 3, 0.5, 12, undefined, { source: 'tensorboard' });
    const scalars: MetricsEvent = { v: 1, type: 'scalars', time: 13, step: 4, values: { 'eval/acc': null } };
    h.apply(scalars);
    const step = (rank: number, loss: number | null): MetricsEvent =>
      ({
        v: 1,
        type: 'step',
        time: 14,
        step: 5,
        rank,
        loss,
        lr: 1e-3,
        grad_norm: 1,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1,
      }) as MetricsEvent;
    h.apply(step(0, 2.0));
    h.apply(step(1, null));
    assert.deepEqual(brief(h), [
      ['train/grad_norm', 1, null, 'inf', 'tensorboard'],
      ['eval/acc', 4, 0, 'unknown', 'companion'],
      ['train/loss', 5, 1, 'unknown', 'runtime'],
    ]);
    // The grad norm's Inf came and went; eval/acc ends not finite: the run ends with it.
    assert.equal(nonFiniteAtEnd(h)!.text, 'eval/acc NaN or Inf since step 4');
  });

  it('a series covered by a located anomaly (fsdp_studio.watch) adds no second entry; the located one names the module', () => {
    const h = new RunHistory();
    h.applyScalar('train/loss', 7, Number.NaN, 10, undefined, { rank: 0, source: 'companion' });
    h.applyScalar('train/grad_norm', 9, Number.NaN, 12, undefined, { rank: 0, source: 'companion' });
    const located: AnomalyEvent = {
      v: 1,
      type: 'anomaly',
      time: 10,
      step: 7,
      kind: 'nan',
      where: { phase: 'forward', layer: 'transformer.h.3', op: 'attn', rank: 0 },
      action: 'report',
    };
    h.apply(located);
    const advice = adviceContext('command', { command: ['python', 'train.py'] });
    assert.deepEqual(
      nonFiniteViews(h.nonFinite.list(), h.anomalies, advice).map((v) => v.scalar?.tag),
      ['train/grad_norm'],
    );
    // The native runtime: rank 1 located it; rank 0's NaN loss of that step is the same NaN, averaged in.
    const native = new RunHistory();
    const step = (rank: number): MetricsEvent =>
      ({
        v: 1,
        type: 'step',
        time: 5,
        step: 3,
        rank,
        loss: null,
        lr: 1e-3,
        grad_norm: null,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1,
      }) as MetricsEvent;
    native.apply(step(0));
    native.apply(step(1));
    native.apply({ ...located, step: 3, where: { phase: 'backward', layer: 1, op: 'mlp', rank: 1 } });
    assert.equal(native.nonFinite.size, 4, 'loss and grad norm of both ranks');
    assert.deepEqual(nonFiniteViews(native.nonFinite.list(), native.anomalies, advice), []);
  });

  it('finds the Trainer in a script that imports it across lines, as the HF examples do', () => {
    const runClm =
      'import transformers\nfrom transformers import (\n    CONFIG_MAPPING,\n    HfArgumentParser,\n    Trainer,\n    TrainingArguments,\n    set_seed,\n)\n';
    assert.equal(frameworkOf('torchrun', runClm), 'hf-trainer');
    assert.equal(frameworkOf('torchrun', 'from transformers import (\n    AutoModel,\n)\n'), 'pytorch');
    assert.equal(frameworkOf('accelerate', 'from accelerate import (\n    Accelerator,\n)\n'), 'accelerate');
  });
});
