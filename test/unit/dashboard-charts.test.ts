import assert from 'node:assert/strict';
import type { ChartFrame } from '../../core/panels/chart-messages';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { DashboardCharts, type ChartView } from '../../core/runs/dashboard-charts';
import { RunHistory } from '../../core/runs/run-history';

const plan = { params: 1, grads: 1, optimizer: 2, activations: 3, workspace: 0, comm: 0, other: 0, total: 900 };
const T0 = 1_700_000_000;

function history(
  n: number,
  ranks = 1,
  opts: { config?: object; start?: object; rss?: boolean; secondsPerStep?: number } = {},
): RunHistory {
  const h = new RunHistory();
  h.apply({
    v: 1,
    type: 'run_start',
    time: T0,
    run_id: 'r',
    config: (opts.config ?? {}) as Record<string, unknown>,
    world: { size: ranks, ranks: [] },
    memory_plan: plan,
    ...opts.start,
  } as MetricsEvent);
  const dt = opts.secondsPerStep ?? 1;
  for (let s = 1; s <= n; s++) {
    for (let r = 0; r < ranks; r++) {
      h.apply({
        v: 1,
        type: 'step',
        time: T0 + 10 + s * dt,
        step: s,
        loss: 10 / s,
        lr: 1e-3,
        grad_norm: 1 + (s % 3),
        tokens_per_s: 100 + (s % 5),
        step_ms: 5,
        mem_peak: 1000 * (r + 1),
        ...(opts.rss ? { mem_rss: 5000 + s } : {}),
        ...(ranks > 1 ? { rank: r } : {}),
      } as MetricsEvent);
    }
    if (s % 100 === 0) h.apply({ v: 1, type: 'checkpoint', time: T0 + 10 + s * dt, step: s, path: `c${s}`, bytes: 1 });
    if (s % 250 === 0) h.apply({ v: 1, type: 'eval', time: T0 + 10 + s * dt, step: s, val_loss: 5 / s });
  }
  return h;
}

const view = (v: Partial<ChartView> = {}): ChartView => ({
  range: null,
  width: 500,
  smoothing: 0,
  xAxis: 'step',
  ...v,
});
const chart = (charts: ChartFrame[], id: string) => charts.find((c) => c.id === id)!;

describe('DashboardCharts', () => {
  it("says why a chart is empty: no steps yet, or a metric a person's PyTorch script does not report (its memory)", () => {
    const h = new RunHistory();
    h.apply({
      v: 1,
      type: 'run_start',
      time: T0,
      run_id: 'r',
      config: { command: ['python3', 'train.py'] },
      world: { size: 1, ranks: [] },
    } as MetricsEvent);
    assert.equal(chart(new DashboardCharts(h).build(view()).charts, 'memory').empty, 'No steps yet.');
    for (let s = 1; s <= 5; s++)
      h.applyPrinted(s, [{ tag: 'printed/loss', value: 1 / s, metric: 'loss' }], T0 + s, {
        file: 'stdout',
        format: 'nanoGPT',
        counted: false,
      });
    const { charts } = new DashboardCharts(h).build(view());
    assert.equal(chart(charts, 'loss').empty, undefined);
    assert.match(
      chart(charts, 'memory').empty ?? '',
      /^No memory reported: .*this run's trainer reports none \(PyTorch keeps no allocator peak on the CPU/,
    );
    assert.equal(chart(charts, 'lr').empty, 'Not reported by this run.');
    assert.equal(
      chart(new DashboardCharts(history(5)).build(view()).charts, 'memory').empty,
      undefined,
      'a native run draws its memory',
    );
  });

  it('a loss NaN to the end is found from the step it began (a run "completed" that learned nothing after it)', () => {
    const h = history(10);
    assert.equal(h.nonFiniteLossSince(), undefined);
    for (let s = 11; s <= 20; s++)
      h.apply({
        v: 1,
        type: 'step',
        time: T0 + 100 + s,
        step: s,
        loss: s === 12 ? 3 : null,
        lr: 1e-3,
        grad_norm: null,
        tokens_per_s: 1,
        step_ms: 5,
        mem_peak: 1,
      } as MetricsEvent);
    assert.equal(h.nonFiniteLossSince(), 13, 'from the step after the last finite loss');
  });

  it('gives each chart its series downsampled to the width, the EMA and validation loss on the loss chart', () => {
    const { charts, totalPoints, extent } = new DashboardCharts(history(100_000)).build(view({ smoothing: 0.9 }));
    assert.equal(totalPoints, 100_000);
    assert.deepEqual(extent, { min: 1, max: 100_000 });
    const loss = chart(charts, 'loss');
    assert.deepEqual(
      loss.series.map((s) => s.label),
      ['loss', 'loss (EMA 0.90)', 'val loss'],
    );
    assert.ok(loss.series[0].points.x.length <= 2000, `${loss.series[0].points.x.length} points for 500 px`);
    assert.equal(loss.series[2].sparse, true);
    assert.equal(loss.series[2].points.x.length, 400, 'validation points are few and all sent');
    assert.ok(!charts.some((c) => c.id === 'mfu'), 'no MFU chart when the run reports none');
  });

  it('smooths every measured series, not only the loss; the learning rate (a schedule) stays as set', () => {
    const { charts } = new DashboardCharts(history(300, 1, { rss: true, start: { peak_flops: 1e11 } })).build(
      view({ smoothing: 0.6 }),
    );
    for (const id of ['loss', 'grad_norm', 'tokens_per_s', 'memory']) {
      const c = chart(charts, id);
      const smoothed = c.series.filter((s) => s.role === 'smoothed');
      assert.ok(smoothed.length >= 1, `${id} has a smoothed line`);
      for (const s of smoothed)
        assert.ok(
          c.series.some((r) => r.label === s.colourOf && r.role === 'raw'),
          `${s.label} goes with its raw line`,
        );
    }
    assert.deepEqual(
      chart(charts, 'lr').series.map((s) => s.label),
      ['lr'],
    );
    const ema = chart(charts, 'grad_norm').series[1].points.y;
    assert.ok(
      ema.slice(10).every((v) => v! > 1.5 && v! < 2.5),
      'the EMA of 1,2,3,1,2,3… settles near 2',
    );
  });

  it('shows measured allocator peak and resident memory as separate lines and the plan as a dashed reference', () => {
    const { charts } = new DashboardCharts(history(50, 1, { rss: true })).build(view());
    const memory = chart(charts, 'memory');
    assert.deepEqual(
      memory.series.map((s) => [s.label, s.role ?? 'line']),
      [
        ['allocator peak', 'line'],
        ['resident (RSS)', 'line'],
        ['plan', 'reference'],
      ],
    );
    assert.deepEqual(memory.series[1].points.y.slice(0, 3), [5001, 5002, 5003], 'RSS as measured, step by step');
    assert.deepEqual(memory.series[2].points, { x: [1, 50], y: [900, 900] }, 'the plan spans the run');
    assert.match(memory.note!, /dashed: the plan/);
  });

  it('on a GPU, draws the memory NVML says is in use as its own line', () => {
    const h = history(3);
    for (let s = 4; s <= 6; s++)
      h.apply({
        v: 1,
        type: 'step',
        time: T0 + 20 + s,
        step: s,
        loss: 1,
        lr: 1,
        grad_norm: 1,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1000,
        gpu: { mem_used: 7e9 + s, util: 97 },
      } as MetricsEvent);
    const memory = chart(new DashboardCharts(h).build(view()).charts, 'memory');
    const nvml = memory.series.find((s) => s.label === 'GPU memory used (NVML)')!;
    assert.deepEqual(nvml.points, { x: [4, 5, 6], y: [7e9 + 4, 7e9 + 5, 7e9 + 6] });
    assert.match(memory.note!, /GPU memory in use/);
  });

  it('draws memory per rank for multi-rank runs', () => {
    const { charts } = new DashboardCharts(history(10, 3)).build(view());
    const memory = chart(charts, 'memory');
    assert.equal(memory.title, 'Memory per rank');
    assert.deepEqual(
      memory.series.filter((s) => s.role !== 'reference').map((s) => [s.label, s.points.y[0]]),
      [
        ['allocator peak, rank 0', 1000],
        ['allocator peak, rank 1', 2000],
        ['allocator peak, rank 2', 3000],
      ],
    );
  });

  it('sends only the markers and points of the zoomed range', () => {
    const { charts } = new DashboardCharts(history(1000)).build(view({ range: { min: 250, max: 450 }, width: 800 }));
    const loss = chart(charts, 'loss');
    assert.deepEqual(
      loss.markers!.map((m) => m.step),
      [300, 400],
    );
    assert.deepEqual(
      loss.series.map((s) => s.label),
      ['loss', 'val loss'],
    );
    assert.equal(loss.series[0].points.x[0], 249);
    assert.equal(loss.series[0].points.x.at(-1), 451);
  });

  it('puts x in seconds on a wall-clock or elapsed axis, markers and range included', () => {
    const h = history(100, 1, { secondsPerStep: 2 });
    const elapsed = new DashboardCharts(h).build(view({ xAxis: 'elapsed' }));
    const loss = chart(elapsed.charts, 'loss');
    // The run began at T0; step s was logged at T0 + 10 + 2s.
    assert.deepEqual(loss.series[0].points.x.slice(0, 3), [12, 14, 16]);
    assert.deepEqual(elapsed.extent, { min: 12, max: 210 });
    assert.deepEqual(elapsed.xAxis, { mode: 'elapsed', origin: T0 });
    assert.deepEqual(
      loss.markers!.map((m) => [m.step, m.x]),
      [[100, 210]],
    );
    const wall = new DashboardCharts(h).build(view({ xAxis: 'time', range: { min: T0 + 50, max: T0 + 60 } }));
    const xs = chart(wall.charts, 'loss').series[0].points.x;
    assert.deepEqual(
      xs,
      [T0 + 48, T0 + 50, T0 + 52, T0 + 54, T0 + 56, T0 + 58, T0 + 60, T0 + 62],
      'the steps in those seconds, and one each side',
    );
    const val = chart(wall.charts, 'loss').series.find((s) => s.label === 'val loss');
    assert.equal(val, undefined, 'no evaluation in this run before step 250');
  });

  it('says what MFU is measured against and when that peak was measured; MFU above 100% is shown at 100% and said', () => {
    const measured = Date.UTC(2026, 10, 23, 14, 5) / 1000;
    const h = history(20, 1, {
      start: {
        peak_flops: 2.35e11,
        peak_source: 'sgemm measured on this machine (cached 2026-11-23)',
        peak_measured: measured,
      },
    });
    for (let s = 21; s <= 25; s++)
      h.apply({
        v: 1,
        type: 'step',
        time: T0 + 100 + s,
        step: s,
        loss: 1,
        lr: 1,
        grad_norm: 1,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1,
        mfu: 0.42,
      } as MetricsEvent);
    const mfu = chart(new DashboardCharts(h).build(view()).charts, 'mfu');
    assert.equal(
      mfu.note,
      'of 235 GFLOP/s per rank (sgemm measured on this machine (cached 2026-11-23)), measured 2026-11-23 14:05 UTC',
    );
    assert.match(mfu.tooltip!, /235 GFLOP\/s, from sgemm measured .*, measured 2026-11-23 14:05 UTC/);
    assert.deepEqual(
      mfu.peak,
      { flops: 2.35e11, source: 'sgemm measured on this machine (cached 2026-11-23)', measured },
      'the peak goes to the webview as data too',
    );
    // A run recorded before the runtime raised its peak: its 122% and 159% are drawn at 100% and said.
    h.apply({
      v: 1,
      type: 'step',
      time: T0 + 200,
      step: 26,
      loss: 1,
      lr: 1,
      grad_norm: 1,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
      mfu: 1.22,
    } as MetricsEvent);
    h.apply({
      v: 1,
      type: 'step',
      time: T0 + 201,
      step: 27,
      loss: 1,
      lr: 1,
      grad_norm: 1,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
      mfu: 1.59,
    } as MetricsEvent);
    const over = chart(new DashboardCharts(h).build(view()).charts, 'mfu');
    assert.match(
      over.note!,
      /; 2 steps measured above it \(up to 159%\) shown at 100%: that peak is below what this device does$/,
    );
    const y = over.series[0].points.y.filter((v): v is number => v !== null);
    assert.equal(Math.max(...y), 1, 'never drawn above 100%');
    assert.equal(h.step.mfu.values.at(-1), 1);
  });

  it('follows a peak the run raised: the note names the new peak and the step that raised it', () => {
    const h = history(2, 1, {
      start: { peak_flops: 1e9, peak_source: "this machine's sgemm peak", peak_measured: T0 },
    });
    h.apply({
      v: 1,
      type: 'step',
      time: T0 + 50,
      step: 3,
      loss: 1,
      lr: 1,
      grad_norm: 1,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
      mfu: 1,
      flops_per_s: 4.2e10,
      peak_flops: 4.2e10,
    } as MetricsEvent);
    h.apply({
      v: 1,
      type: 'step',
      time: T0 + 51,
      step: 4,
      loss: 1,
      lr: 1,
      grad_norm: 1,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
      mfu: 0.9,
    } as MetricsEvent);
    const mfu = chart(new DashboardCharts(h).build(view()).charts, 'mfu');
    assert.match(
      mfu.note!,
      /^of 42 GFLOP\/s per rank \(this machine's sgemm peak\), measured .* UTC; raised at step 3 from 1 GFLOP\/s: this run went faster than the peak it had$/,
    );
    assert.deepEqual(mfu.peak?.raised, { step: 3, from: 1e9 });
    assert.equal(mfu.peak?.flops, 4.2e10);
  });

  it('marks a loss spike on the loss chart, a clipped grad-norm excursion on the grad-norm chart, with the clipping threshold dashed', () => {
    const h = history(60, 1, { config: { training: { max_grad_norm: 1.0 } } });
    h.apply({
      v: 1,
      type: 'step',
      time: T0 + 100,
      step: 61,
      loss: 2.2 * (10 / 60),
      lr: 1,
      grad_norm: 2.49,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
    } as MetricsEvent);
    h.apply({
      v: 1,
      type: 'anomaly',
      time: T0 + 100,
      step: 61,
      kind: 'spike',
      where: { phase: 'loss' },
      action: 'report',
      value: 2.4930341506992773,
      zscore: 8.1,
      metric: 'grad_norm',
    });
    const { charts } = new DashboardCharts(h).build(view());
    assert.deepEqual(
      chart(charts, 'loss')
        .markers!.filter((m) => m.kind === 'spike')
        .map((m) => [m.step, m.label]),
      [[61, 'loss 2.1× its recent level (0.1724 → 0.3667)']],
    );
    assert.deepEqual(
      chart(charts, 'grad_norm').markers!.map((m) => [m.step, m.kind, m.label]),
      [[61, 'clipped', 'gradient norm 2.493 (z = 8.1), clipped to 1']],
    );
    const clip = chart(charts, 'grad_norm').series.find((s) => s.role === 'reference')!;
    assert.equal(clip.label, 'clipped at 1');
    assert.deepEqual(clip.points.y, [1, 1]);
  });
});
