// What the spike view says about a run's spikes: loss spikes first (they are what a person must
// look at), then grad-norm excursions; each with its values rounded, what happened to the step,
// the loss and gradient norm around it, and the usual fixes with the config edit each makes.
import type { ChartFrame, ChartMarker } from '../panels/chart-messages';
import type { Fix } from '../panels/diagnostics-messages';
import type { SpikeEntry } from '../panels/spike-messages';
import { downsampleToView } from './downsample';
import { roundForDisplay } from './number-format';
import {
  clipAdvice,
  earlyInRun,
  learningRateAdvice,
  suggestedWarmup,
  warmupAdvice,
  type AdviceContext,
} from './run-advice';
import type { RunHistory } from './run-history';
import { describeSpike, type Spike } from './spikes';

/** Steps shown each side of a spike. */
export const SPIKE_WINDOW_STEPS = 60;

/** Loss spikes first, then grad-norm excursions; by step within each. */
export function orderSpikes(spikes: readonly Spike[]): Spike[] {
  return [...spikes].sort((a, b) => (a.metric === b.metric ? a.step - b.step : a.metric === 'loss' ? -1 : 1));
}

export function spikeEntry(s: Spike): SpikeEntry {
  const facts: Array<[string, string]> = [
    ['step', String(s.step)],
    ['metric', s.metric === 'loss' ? 'training loss' : 'gradient norm (before clipping)'],
    ['value', roundForDisplay(s.value)],
  ];
  if (s.baseline !== undefined) facts.push(['recent level', roundForDisplay(s.baseline)]);
  if (s.ratio !== undefined) facts.push(['jump', `${s.ratio.toFixed(2)}×`]);
  if (s.zscore !== undefined) facts.push(['z-score', s.zscore.toFixed(1)]);
  if (s.clippedTo !== undefined) facts.push(['clipped to', roundForDisplay(s.clippedTo)]);
  facts.push([
    'seen by',
    s.source === 'runtime' ? "the runtime's spike detector" : 'the watch (loss against its recent level)',
  ]);
  return {
    step: s.step,
    metric: s.metric,
    summary: describeSpike(s),
    facts,
    outcome: outcome(s),
    alert: s.alert === 'marker' ? 'marker' : 'warning',
  };
}

function outcome(s: Spike): string {
  if (s.action === 'skip')
    return `The update of step ${s.step} was skipped (stability.on_spike: skip); training went on with the next batch.`;
  if (s.clippedTo !== undefined)
    return `Gradient clipping scaled this step's update down to a norm of ${roundForDisplay(s.clippedTo)}: this is what clipping is for, and needs nothing unless it happens often.`;
  if (s.metric === 'grad_norm') return 'The update was applied as computed: gradient clipping is off.';
  return 'The update was applied. Watch whether the loss comes back to its level within a few steps; if it does not, the run may be diverging.';
}

/**
 * The usual fixes for a spike, the ones that apply to this run first: a native run's with the
 * config edit each makes, a person's own script's in its framework's words (nothing edits a file).
 * Warmup advice scales to the run's length.
 */
export function spikeFixes(s: Spike, ctx: AdviceContext): Fix[] {
  if (ctx.framework !== 'native') return scriptSpikeFixes(s, ctx);
  const c = ctx.config;
  const fixes: Fix[] = [];
  if (s.clippedTo !== undefined && s.action !== 'skip')
    return [
      {
        id: 'lower_lr',
        title: 'Only if it recurs: lower the learning rate',
        detail:
          'Clipping absorbed this excursion. If grad-norm excursions come often, the steps are too large for the loss surface here.',
        ...(c.training?.learning_rate !== undefined ? { action: 'Halve learning_rate' } : {}),
      },
    ];
  const lr = c.training?.learning_rate;
  fixes.push({
    id: 'lower_lr',
    title: 'Lower the learning rate',
    detail: `A learning rate too high for the loss surface makes the loss jump.${lr !== undefined ? ` Halving it takes training.learning_rate from ${lr} to ${lr / 2}.` : ''}`,
    ...(lr !== undefined ? { action: 'Halve learning_rate' } : {}),
  });
  const warmup = c.training?.warmup_steps ?? 0;
  const total = c.training?.max_steps;
  const next = suggestedWarmup(warmup, total);
  if (next !== undefined && earlyInRun(s.step, warmup, total)) {
    fixes.push({
      id: 'longer_warmup',
      title: 'Warm up for longer',
      detail: `Early in a run the optimizer's statistics are still settling; a longer warmup keeps the first steps small. training.warmup_steps is ${warmup}${total !== undefined ? ` of ${total} steps` : ''}; ${next} is a common next try.`,
      action: `Set warmup_steps: ${next}`,
    });
  }
  const clip = c.training?.max_grad_norm;
  if (clip === undefined || clip === 0 || clip > 1)
    fixes.push({
      id: 'clip',
      title: 'Clip gradients',
      detail: `A large gradient makes a large step. training.max_grad_norm is ${clip ?? 'not set'}; 1.0 is the usual value.`,
      action: 'Set max_grad_norm: 1.0',
    });
  if (c.stability?.on_spike !== 'skip')
    fixes.push({
      id: 'skip_spikes',
      title: 'Skip the updates of spiking steps',
      detail:
        'With stability.on_spike: skip the runtime drops the update of a step its spike detector flags, so one bad batch does not move the weights.',
      action: 'Set on_spike: skip',
    });
  fixes.push({
    id: 'check_data',
    title: 'Check the data',
    detail: `One unusual batch (repeated text, a corrupt shard) spikes the loss for a step. Look at what the run read around step ${s.step}.`,
  });
  return fixes;
}

function scriptSpikeFixes(s: Spike, ctx: Exclude<AdviceContext, { framework: 'native' }>): Fix[] {
  if (s.clippedTo !== undefined)
    return [
      {
        id: 'lower_lr',
        title: 'Only if it recurs: lower the learning rate',
        detail: `Clipping absorbed this excursion. If grad-norm excursions come often, the steps are too large. ${learningRateAdvice(ctx)}`,
      },
    ];
  const fixes: Fix[] = [
    {
      id: 'lower_lr',
      title: 'Lower the learning rate',
      detail: `A learning rate too high for the loss surface makes the loss jump. ${learningRateAdvice(ctx)}`,
    },
  ];
  if (earlyInRun(s.step, 0, ctx.totalSteps))
    fixes.push({
      id: 'longer_warmup',
      title: 'Warm up for longer',
      detail: `Early in a run the optimizer's statistics are still settling; a warmup keeps the first steps small. ${warmupAdvice(ctx)}`,
    });
  fixes.push({
    id: 'clip',
    title: 'Clip gradients',
    detail: `A large gradient makes a large step; 1.0 is the usual norm to clip at. ${clipAdvice(ctx)}`,
  });
  fixes.push({
    id: 'check_data',
    title: 'Check the data',
    detail: `One unusual batch (repeated text, a corrupt shard) spikes the loss for a step. Look at what your DataLoader gave around step ${s.step}.`,
  });
  return fixes;
}

/** The loss and the gradient norm around a spike, at most `width` columns each, the spikes in view marked. */
export function spikeCharts(h: RunHistory, s: Spike, width: number, spikes: readonly Spike[]): ChartFrame[] {
  const range = { min: s.step - SPIKE_WINDOW_STEPS, max: s.step + SPIKE_WINDOW_STEPS };
  const marks = (metric: Spike['metric']): ChartMarker[] =>
    spikes
      .filter((o) => o.metric === metric && o.step >= range.min && o.step <= range.max)
      .map((o) => ({
        x: o.step,
        step: o.step,
        kind: o.alert === 'marker' ? 'clipped' : 'spike',
        label: describeSpike(o),
      }));
  const points = (series: { steps: Float64Array; values: Float64Array }) =>
    downsampleToView(series.steps, series.values, range, width);
  return [
    {
      id: 'loss',
      title: 'Loss',
      unit: 'number',
      series: [{ label: 'loss', points: points(h.step.loss) }],
      markers: marks('loss'),
    },
    {
      id: 'grad_norm',
      title: 'Gradient norm',
      unit: 'number',
      note: 'before clipping',
      series: [{ label: 'grad norm', points: points(h.step.grad_norm) }],
      markers: marks('grad_norm'),
    },
  ];
}
