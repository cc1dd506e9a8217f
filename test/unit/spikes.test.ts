import assert from 'node:assert/strict';
import type { AnomalyEvent, MetricsEvent } from '../../core/protocol/metrics';
import { RunHistory } from '../../core/runs/run-history';
import { anomalyAlert, describeSpike, SpikeFinder } from '../../core/runs/spikes';

/** A deterministic noise in [-1, 1) (an LCG), so every run of the test sees the same "random" loss. */
function noise(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 31 - 1;
  };
}

/** A healthy byte-level run's loss: ln(256) falling toward 1.6, with ±4% noise per step. */
function healthyLoss(steps: number, seed = 7): number[] {
  const r = noise(seed);
  return Array.from({ length: steps }, (_, i) => (1.6 + 3.95 * Math.exp(-(i + 1) / 60)) * (1 + 0.04 * r()));
}

function run(
  losses: number[],
  opts: { gradNorms?: number[]; config?: unknown; anomalies?: AnomalyEvent[] } = {},
): RunHistory {
  const h = new RunHistory();
  h.apply({
    v: 1,
    type: 'run_start',
    time: 0,
    run_id: 'r',
    config: (opts.config ?? {}) as Record<string, unknown>,
    world: { size: 1, ranks: [] },
    memory_plan: { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: 0 },
  });
  losses.forEach((loss, i) => {
    const step = i + 1;
    h.apply({
      v: 1,
      type: 'step',
      time: step,
      step,
      loss,
      lr: 1e-3,
      grad_norm: opts.gradNorms?.[i] ?? 0.8,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
    } as MetricsEvent);
    for (const a of opts.anomalies ?? []) if (a.step === step) h.apply(a);
  });
  return h;
}

const gradSpike = (step: number, value: number, action: AnomalyEvent['action'] = 'report'): AnomalyEvent => ({
  v: 1,
  type: 'anomaly',
  time: step,
  step,
  kind: 'spike',
  where: { phase: 'loss' },
  action,
  value,
  zscore: 7.3,
  metric: 'grad_norm',
});

describe('spikes', () => {
  it('flags a 2.2× loss jump at step 15, early in a falling loss, before the runtime has a window', () => {
    const losses = healthyLoss(60);
    losses[14] = 2.2 * losses[13];
    const spikes = new SpikeFinder(run(losses)).spikes();
    assert.deepEqual(
      spikes.map((s) => [s.step, s.metric, s.source, s.alert]),
      [[15, 'loss', 'watch', 'warning']],
    );
    assert.ok(spikes[0].ratio! > 2 && spikes[0].ratio! < 2.4, `ratio ${spikes[0].ratio}`);
    assert.match(describeSpike(spikes[0]), /^loss 2\.\d× its recent level \(\d+\.\d{1,3} → \d+\.\d{1,3}\)$/);
  });

  it('finds nothing in a healthy 1,200-step run, and a jump that lasts is one spike', () => {
    assert.deepEqual(new SpikeFinder(run(healthyLoss(1200))).spikes(), []);
    const diverging = healthyLoss(300);
    for (let i = 200; i < 300; i++) diverging[i] *= 3;
    assert.deepEqual(
      new SpikeFinder(run(diverging)).spikes().map((s) => s.step),
      [201],
    );
  });

  it('a grad-norm spike that clipping absorbs is a marker; without clipping, or when the update was skipped, a warning', () => {
    const clipped = { training: { max_grad_norm: 1.0 } };
    assert.equal(anomalyAlert(gradSpike(40, 2.4930341506992773), clipped), 'marker');
    assert.equal(anomalyAlert(gradSpike(40, 2.49), { training: { max_grad_norm: 0 } }), 'warning');
    assert.equal(anomalyAlert(gradSpike(40, 2.49, 'skip'), clipped), 'warning');
    assert.equal(anomalyAlert({ ...gradSpike(40, 9), metric: 'loss' }, clipped), 'warning');
    assert.equal(anomalyAlert({ ...gradSpike(40, 9), kind: 'nan' }, clipped), 'error');

    const h = run(healthyLoss(100), {
      config: clipped,
      anomalies: [gradSpike(40, 2.4930341506992773), gradSpike(77, 2.61)],
    });
    const spikes = new SpikeFinder(h).spikes();
    assert.deepEqual(
      spikes.map((s) => [s.step, s.metric, s.alert, s.clippedTo]),
      [
        [40, 'grad_norm', 'marker', 1],
        [77, 'grad_norm', 'marker', 1],
      ],
    );
    assert.equal(describeSpike(spikes[0]), 'gradient norm 2.493 (z = 7.3), clipped to 1');
  });

  it('reads the gradient norm too: an order-of-magnitude jump before the runtime has a window; a norm wandering 4× is none', () => {
    // tiny-cpu's first run's norms around its step 14 (samples/tiny-cpu.yaml), then a wandering tail.
    const r = noise(3);
    const norms = [6.3, 5.86, 3.64, 2.64, 2.41, 2.31, 2.31, 2.38, 2.25, 2.13, 2.02, 1.93, 1.78, 84.39, 1.68];
    for (let i = norms.length; i < 300; i++) norms.push(1.2 * (1 + 0.6 * r()) * (i % 37 === 0 ? 4 : 1));
    const losses = healthyLoss(300);
    const clipped = new SpikeFinder(run(losses, { gradNorms: norms, config: { training: { max_grad_norm: 1 } } }));
    const [spike, ...rest] = clipped.spikes();
    assert.deepEqual(rest, [], 'the 4× excursions every 37 steps are not spikes');
    assert.deepEqual(
      [spike.step, spike.metric, spike.source, spike.alert, spike.clippedTo],
      [14, 'grad_norm', 'watch', 'marker', 1],
    );
    assert.ok(spike.ratio! > 40 && spike.ratio! < 50, `ratio ${spike.ratio}`);
    assert.equal(
      describeSpike(spike),
      `gradient norm 84.39, ${spike.ratio!.toFixed(0)}× its recent level (2.02), clipped to 1`,
    );
    // Without clipping the same jump is a warning.
    const [unclipped] = new SpikeFinder(run(losses, { gradNorms: norms })).spikes();
    assert.deepEqual([unclipped.step, unclipped.alert, unclipped.clippedTo], [14, 'warning', undefined]);
  });

  it("a loss spike both the runtime and the watch saw is one spike, with the runtime's action and the watch's baseline", () => {
    const losses = healthyLoss(80);
    losses[59] = 3 * losses[58];
    const runtime: AnomalyEvent = {
      v: 1,
      type: 'anomaly',
      time: 60,
      step: 60,
      kind: 'spike',
      where: { phase: 'loss' },
      action: 'skip',
      value: losses[59],
      zscore: 9,
      metric: 'loss',
    };
    const [spike, ...rest] = new SpikeFinder(run(losses, { anomalies: [runtime] })).spikes();
    assert.equal(rest.length, 0);
    assert.equal(spike.source, 'runtime');
    assert.equal(spike.action, 'skip');
    assert.ok(spike.baseline! > 0 && spike.ratio! > 2.5);
  });

  it('reports each spike once as a run grows, and re-reads steps a resume replaced', () => {
    const losses = healthyLoss(200);
    losses[99] = 2.5 * losses[98];
    const h = run(losses.slice(0, 50));
    const finder = new SpikeFinder(h);
    assert.deepEqual(finder.newSpikes(), []);
    for (let s = 51; s <= 200; s++)
      h.apply({
        v: 1,
        type: 'step',
        time: s,
        step: s,
        loss: losses[s - 1],
        lr: 1,
        grad_norm: 1,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1,
      } as MetricsEvent);
    assert.deepEqual(
      finder.newSpikes().map((s) => s.step),
      [100],
    );
    assert.deepEqual(finder.newSpikes(), [], 'not twice');
    // A resume from step 90 replays the steps after it without the jump.
    h.apply({
      v: 1,
      type: 'run_start',
      time: 300,
      run_id: 'r',
      start_step: 90,
      config: {},
      world: { size: 1, ranks: [] },
      memory_plan: { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: 0 },
    });
    for (let s = 91; s <= 120; s++)
      h.apply({
        v: 1,
        type: 'step',
        time: 300 + s,
        step: s,
        loss: s === 100 ? losses[98] : losses[s - 1],
        lr: 1,
        grad_norm: 1,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1,
      } as MetricsEvent);
    assert.deepEqual(
      finder.spikes().map((s) => s.step),
      [],
      'the replaced timeline has no spike',
    );
  });
});
