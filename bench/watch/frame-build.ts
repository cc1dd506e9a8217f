// What one dashboard frame costs the extension host on a run of N steps (default a million): the
// spike rule's first pass over the loss on attach, then the median of several whole-run frames on
// the step axis and on the elapsed axis, and of a frame zoomed to a tenth of the run.
// Run: node --import tsx bench/watch/frame-build.ts [STEPS]. Prints JSON with the load average.
import os from 'node:os';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { DashboardCharts } from '../../core/runs/dashboard-charts';
import { RunHistory } from '../../core/runs/run-history';

const steps = Number(process.argv[2] ?? 1_000_000);
const plan = { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: 1e9 };
const h = new RunHistory();
h.apply({
  v: 1,
  type: 'run_start',
  time: 0,
  run_id: 'bench',
  config: { training: { max_grad_norm: 1 } },
  world: { size: 1, ranks: [] },
  memory_plan: plan,
  peak_flops: 1e11,
});
for (let s = 1; s <= steps; s++) {
  h.apply({
    v: 1,
    type: 'step',
    time: s * 0.01,
    step: s,
    loss: 3 + Math.sin(s / 100) + 0.05 * Math.sin(s),
    lr: 1e-3,
    grad_norm: 1 + (s % 7) / 10,
    tokens_per_s: 1000 + (s % 13),
    step_ms: 10,
    mem_peak: 1e9,
    mem_rss: 2e9 + (s % 3) * 4096,
    mfu: 0.3,
  } as MetricsEvent);
}
const charts = new DashboardCharts(h);
const ms = (f: () => void) => {
  const t = performance.now();
  f();
  return performance.now() - t;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const spikesFirstPassMs = ms(() => charts.spikes.spikes());
const firstFrameMs = ms(() => charts.build({ range: null, width: 1200, smoothing: 0.6, xAxis: 'step' }));
const frames = (xAxis: 'step' | 'elapsed', range: { min: number; max: number } | null) =>
  median(Array.from({ length: 7 }, () => ms(() => charts.build({ range, width: 1200, smoothing: 0.6, xAxis }))));
console.log(
  JSON.stringify({
    steps,
    loadAverage1m: os.loadavg()[0],
    spikesFirstPassMs: Math.round(spikesFirstPassMs),
    firstFrameMs: Math.round(firstFrameMs),
    wholeRunStepAxisMs: Math.round(frames('step', null)),
    wholeRunElapsedAxisMs: Math.round(frames('elapsed', null)),
    tenthZoomedMs: Math.round(frames('step', { min: steps * 0.4, max: steps * 0.5 })),
  }),
);
