// The "Memory estimator" panel: the config's estimate as stacked bars per phase with the fit
// verdict, controls to try other knobs (re-estimated here, synchronously, within the frame of the
// input event), comparisons, and "apply" to write a change back into the config.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu, hostTarget, type GpuSpec } from '../../core/memory/gpu-presets';
import { applyChange, describeChange, type MemoryChange } from '../../core/memory/memory-change';
import type { MemoryInput } from '../../core/memory/memory-input';
import { fewestGpus } from '../../core/memory/inverse-questions';
import type { MemoryEstimate } from '../../core/memory/memory-estimate';
import { parameterCounts } from '../../core/memory/model-shape';
import { totalParameters } from '../../core/memory/parallel/nd-model';
import { describePlan } from '../../core/memory/parallel/parallel-plan';
import {
  formatBytes,
  formatParameters,
  notModelledBound,
  notModelledLong,
  summaryLine,
  unitOf,
  verdictText,
} from '../../core/memory/summary';
import type {
  EstimatorConfigMessage,
  MemoryEstimatorFromWebview,
  MemoryEstimatorToWebview,
} from '../../core/panels/memory-estimator-messages';
import { connectToHost } from '../shared/vscode-api';
import { Comparisons } from './comparisons';
import { Controls, HOST_TARGET } from './controls';
import { el, fill } from './dom';
import { NdParallelSection } from './nd-parallel';
import { PhaseBars } from './phase-bars';
import './style.css';

interface PanelState {
  config?: EstimatorConfigMessage;
  /** The input as the panel's controls have changed it. */
  working?: MemoryInput;
}

const DEFAULT_GPU = 'H100-80GB';
const host = connectToHost<MemoryEstimatorFromWebview, MemoryEstimatorToWebview, PanelState>();
let state: PanelState = host.getState() ?? {};

const app = document.getElementById('app')!;
const title = el('h2', { id: 'title' }, 'Memory estimator');
const verdict = el('div', { id: 'verdict' });
const scope = el('div', { id: 'scope' });
const modelOrigin = el('div', { id: 'model-origin' });
const summary = el('div', { id: 'summary' });
const error = el('div', { id: 'config-error', hidden: '' });
const notes = el('ul', { id: 'notes' });
const pending = el('div', { id: 'pending' });
const message = el('div', { id: 'message', role: 'status' });
const controls = new Controls((change) => tryChanges([change]));
const bars = new PhaseBars();
const comparisons = new Comparisons({ onTry: tryChanges, onApply: apply });
const ndParallel = new NdParallelSection({ onTry: tryChanges, onApply: apply });
app.append(
  title,
  error,
  el('div', { class: 'verdict-box' }, scope, verdict, summary, modelOrigin),
  controls.element,
  pending,
  message,
  bars.element,
  ndParallel.element,
  comparisons.element,
  notes,
);

host.listen((m) => {
  if (m.type === 'config') {
    const keepGpu =
      state.working?.gpu && state.config?.fileName === m.fileName && !m.input.gpu ? state.working.gpu : undefined;
    state = { config: m, working: { ...m.input, gpu: keepGpu ?? m.input.gpu ?? defaultTarget(m) } };
    error.hidden = true;
    render();
  } else if (m.type === 'configError') {
    error.hidden = false;
    fill(error, m.error);
    app.classList.add('stale');
  } else {
    message.className = m.ok ? 'ok' : 'failed';
    fill(message, m.message);
  }
});
if (state.working) render();

/** CPU runs of our runtime are checked against this machine's memory, the rest against an H100. */
function defaultTarget(m: EstimatorConfigMessage): GpuSpec {
  return m.input.device === 'cpu' ? machineTarget(m, m.input.nprocPerNode) : findGpu(DEFAULT_GPU)!;
}

function machineTarget(m: EstimatorConfigMessage, ranks: number): GpuSpec {
  return {
    ...hostTarget(Math.floor(m.hostMemoryBytes / ranks)),
    name: `this machine / ${ranks} rank${ranks > 1 ? 's' : ''}`,
  };
}

function tryChanges(changes: MemoryChange[]): void {
  if (!state.working || !state.config) return;
  let input = state.working;
  for (const c of changes) {
    if (c.knob === 'gpu' && c.value === HOST_TARGET)
      input = { ...input, gpu: machineTarget(state.config, input.nprocPerNode) };
    else input = applyChange(input, c);
  }
  // A text field fires input, then change on blur with the same value: redrawing then would
  // replace the button the pointer is pressing.
  if (JSON.stringify(input) === JSON.stringify(state.working)) return;
  state = { ...state, working: input };
  render();
}

function apply(change: MemoryChange): void {
  fill(message, `Applying ${describeChange(change)}…`);
  message.className = '';
  host.send({ type: 'apply', change });
}

function render(): void {
  const started = performance.now();
  const config = state.config!;
  let input = state.working!;
  // This machine's memory is shared by the ranks: the target follows the rank count.
  if (input.gpu?.kind === 'host' && input.gpu.memoryBytes !== machineTarget(config, input.nprocPerNode).memoryBytes) {
    input = { ...input, gpu: machineTarget(config, input.nprocPerNode) };
    state = { ...state, working: input };
  }
  const e = estimateMemory(input);
  app.classList.remove('stale');
  fill(title, `Memory estimator — ${config.fileName}`, el('span', { class: 'kind' }, config.kind));
  const fits = e.fit?.fits;
  // Unsure and only the range's top is over the GPU: neither "fits" nor "over".
  // So where the config sets what the estimate leaves out: an upper bound over the GPU, or an unsure estimate.
  const bound = notModelledBound(input);
  const mayNotFit = (!!e.fit?.atRangeTop && !fits && e.peak.total <= e.fit.gpu.memoryBytes) || (!fits && !!bound);
  const mayFit = !!fits && bound === 'unsure';
  verdict.className = fits === undefined ? '' : mayFit || mayNotFit ? 'unsure' : fits ? 'fits' : 'over';
  verdict.dataset.fits = String(fits);
  fill(verdict, verdictText(e) ?? 'no target');
  fill(scope, scopeText(e));
  fill(summary, summaryLine(e), ...extraLines(e));
  fill(modelOrigin, originText(config, input));
  controls.show(input, input.gpu?.kind === 'host' ? HOST_TARGET : (input.gpu?.id ?? ''));
  bars.update(e, input.gpu?.memoryBytes, input.gpu?.name);
  ndParallel.show(input, config.kind === 'torchtitan');
  scheduleComparisons(input);
  renderPending(config.input, input);
  fill(notes, ...[...config.notes, ...e.notes].map((n) => el('li', {}, n)));
  host.setState(state);
  // How long this update took, for the benchmark and tests (the frame budget is 16.7 ms).
  app.dataset.updateMs = (performance.now() - started).toFixed(2);
  app.dataset.updates = String(Number(app.dataset.updates ?? 0) + 1);
}

/**
 * The what-if tables take dozens of estimates (a PyTorch one replays the run: milliseconds each), so
 * they are filled after the frame that shows the estimate, a few estimates at a time between frames,
 * and a newer change supersedes them.
 */
let comparisonsFor = 0;
const SLICE_MS = 8;
function scheduleComparisons(input: MemoryInput): void {
  const generation = ++comparisonsFor;
  app.dataset.comparisons = 'pending';
  const steps = [
    ...ndParallel.steps(input, input.gpu?.memoryBytes),
    ...comparisons.steps(input, input.gpu?.memoryBytes),
  ];
  const run = () => {
    if (generation !== comparisonsFor) return;
    const started = performance.now();
    while (steps.length && performance.now() - started < SLICE_MS) steps.shift()!();
    if (steps.length) requestAnimationFrame(() => setTimeout(run, 0));
    else app.dataset.comparisons = 'done';
  };
  // After the frame that shows the estimate.
  requestAnimationFrame(() => setTimeout(run, 0));
}

/** Whose memory the numbers are: "per GPU — 4 GPUs (4 per node × 1), FULL_SHARD, PyTorch". */
function scopeText(e: MemoryEstimate): string {
  const i = e.input;
  const unit = unitOf(e);
  const n = i.nprocPerNode * i.nnodes;
  const who = { 'fsdp-studio': 'our runtime', pytorch: 'PyTorch', deepspeed: 'DeepSpeed', torchtitan: 'torchtitan' }[
    i.framework
  ];
  const how = i.parallel ? describePlan(i.parallel) : i.strategy;
  return `per ${unit} — ${n} ${unit}${n > 1 ? 's' : ''}${i.nnodes > 1 ? ` (${i.nprocPerNode} per node × ${i.nnodes})` : ''}, ${how}, ${who}`;
}

/** Which model, and from where: the config's model section, a preset, or a Hugging Face config.json. */
function originText(config: EstimatorConfigMessage, input: MemoryInput): string {
  const m = config.model;
  const params = `${formatParameters(input.parallel ? totalParameters(input.parallel.model) : parameterCounts(input.model).total)} parameters`;
  if (!m) return `model: ${input.model.name}, ${params}`;
  if (m.assumed) return `model: ${m.name}, ${params} — assumed: name it with model=… in a "fsdp-studio:" comment`;
  const from = m.from === 'preset' ? 'a preset' : m.from === 'custom' ? "the comment's numbers" : m.from;
  return `model: ${m.name}, ${params}, from ${from}${m.namedBy ? ` (named by ${m.namedBy})` : ''}`;
}

/** Host memory under offload, and how many GPUs would hold a run that does not fit. */
function extraLines(e: MemoryEstimate): HTMLElement[] {
  const lines: HTMLElement[] = [];
  if (e.reservedPeak !== undefined)
    lines.push(
      el(
        'div',
        { id: 'allocator' },
        `PyTorch's caching allocator: ${formatBytes(e.allocatorPeak)} allocated at the peak, ${formatBytes(e.reservedPeak)} reserved; with the CUDA context, ${formatBytes(e.peak.total)} as nvidia-smi shows it`,
      ),
    );
  if (e.unsure)
    lines.push(
      el(
        'div',
        { id: 'unsure' },
        `Unsure: ${e.unsure.why}, so no GPU measurement vouches for this estimate. What nvidia-smi shows may be anywhere from ${formatBytes(e.unsure.low)} to ${formatBytes(e.unsure.high)} (two of the allocator's largest segments either way); the verdict is on ${formatBytes(e.unsure.high)}.`,
      ),
    );
  const bound = notModelledBound(e.input);
  if (bound)
    lines.push(
      el(
        'div',
        { id: 'not-modelled' },
        bound === 'upper'
          ? `Not modelled: ${notModelledLong(e.input)}. Each lowers memory, so ${formatBytes(e.unsure?.high ?? e.peak.total)} is an upper bound: "fits" holds, "does not fit" may not.`
          : `Not modelled: ${notModelledLong(e.input)}. They may lower or raise memory, so the verdict on ${formatBytes(e.peak.total)} is unsure either way.`,
      ),
    );
  if (e.host.perRank > 0)
    lines.push(
      el(
        'div',
        { id: 'host-memory' },
        `host memory (offload): ${formatBytes(e.host.perRank)} per ${unitOf(e)}, ${formatBytes(e.host.perNode)} per node`,
      ),
    );
  // More GPUs are offered only when the estimate itself is over (not when only an unsure range's top is).
  if (e.fit && !e.fit.fits && e.fit.gpu.kind === 'gpu' && e.peak.total > e.fit.gpu.memoryBytes) {
    const n = fewestGpus(e.input, e.fit.gpu.memoryBytes);
    lines.push(
      el(
        'div',
        { id: 'fewest-gpus' },
        n
          ? `${bound === 'unsure' ? 'by this unsure estimate, ' : ''}fits on ${n.nprocPerNode * n.nnodes} × ${e.fit.gpu.name} with ${e.input.strategy} (${n.nprocPerNode} per node × ${n.nnodes})`
          : bound
            ? `by this ${bound === 'upper' ? 'upper bound' : 'unsure estimate'}, more GPUs do not make it fit with ${e.input.strategy}; what is not modelled may`
            : `more GPUs do not make it fit with ${e.input.strategy}`,
      ),
    );
  }
  return lines;
}

/** The panel's changes that differ from the config, each with "Apply". */
function renderPending(from: MemoryInput, to: MemoryInput): void {
  const changes: MemoryChange[] = [];
  if (to.microBatch !== from.microBatch) changes.push({ knob: 'microBatch', value: to.microBatch });
  if (to.strategy !== from.strategy) changes.push({ knob: 'strategy', value: to.strategy });
  if (to.checkpointing.policy !== from.checkpointing.policy || to.checkpointing.everyN !== from.checkpointing.everyN) {
    if (to.checkpointing.policy !== 'auto')
      changes.push({
        knob: 'checkpointing',
        value: { policy: to.checkpointing.policy, everyN: to.checkpointing.everyN },
      });
  }
  if (to.precision.param !== from.precision.param)
    changes.push({ knob: 'precision', value: to.precision.param === 'float32' ? 'float32' : 'bfloat16' });
  if (to.offload.optimizer !== from.offload.optimizer) changes.push({ knob: 'offload', value: to.offload.optimizer });
  if (to.nprocPerNode !== from.nprocPerNode) changes.push({ knob: 'nproc', value: to.nprocPerNode });
  if (to.gpu && to.gpu.kind === 'gpu' && to.gpu.id !== from.gpu?.id) changes.push({ knob: 'gpu', value: to.gpu.id });
  const [a, b] = [to.parallel, from.parallel];
  if (
    a &&
    b &&
    state.config?.kind === 'torchtitan' &&
    (a.replicate !== b.replicate ||
      a.shard !== b.shard ||
      a.tp !== b.tp ||
      a.cp !== b.cp ||
      a.pp !== b.pp ||
      a.ep !== b.ep ||
      (a.pp > 1 && a.schedule !== b.schedule))
  ) {
    changes.push({
      knob: 'parallel',
      value: { replicate: a.replicate, shard: a.shard, tp: a.tp, cp: a.cp, pp: a.pp, ep: a.ep, schedule: a.schedule },
    });
  }
  // Keep the buttons when the changes are the same: a pointer may be pressing one of them.
  const key = JSON.stringify(changes);
  if (pending.dataset.changes === key) return;
  pending.dataset.changes = key;
  fill(
    pending,
    ...changes.map((c) => {
      const button = el('vscode-button', { 'data-knob': c.knob }, `Apply ${describeChange(c)}`);
      button.addEventListener('click', () => apply(c));
      return button;
    }),
  );
}
