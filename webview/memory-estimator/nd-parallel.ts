// The panel's N-D parallel section: pick the GPU count and the tensor, context, pipeline and expert
// parallel degrees (data-parallel sharding takes the GPUs left), see the per-GPU memory of that split,
// the splits that fit the target on that many GPUs (fastest-looking first, each with the least
// recomputation that fits), and the inverse questions with every degree free: the largest
// micro-batch with these degrees, the fewest GPUs with any.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import { describePolicy } from '../../core/memory/estimate';
import type { MemoryChange } from '../../core/memory/memory-change';
import type { MemoryInput } from '../../core/memory/memory-input';
import { degreesOf, planOf, type Degrees } from '../../core/memory/parallel/degrees';
import {
  combinations,
  fewestGpusAnyDegrees,
  largestMicroBatchNd,
  type Combination,
} from '../../core/memory/parallel/nd-search';
import { PIPELINE_SCHEDULES, type PipelineSchedule } from '../../core/memory/parallel/pipeline';
import { formatBytes } from '../../core/memory/summary';
import { el, fill } from './dom';

const GPU_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const DEGREES = [1, 2, 4, 8, 16, 32];
const SHOWN = 12;

export interface NdActions {
  /** Try changes in the panel only. */
  onTry(changes: MemoryChange[]): void;
  /** Write the degrees into the config (torchtitan configs). */
  onApply(change: MemoryChange): void;
}

interface Select extends HTMLElement {
  value: string;
}

export class NdParallelSection {
  readonly element: HTMLElement;
  private readonly selects: Record<string, Select> = {};
  private readonly shard = el('span', { id: 'nd-shard' });
  private readonly problem = el('div', { id: 'nd-problem', class: 'nd-problem' });
  private readonly body = el('tbody');
  private readonly largest = el('div', { id: 'nd-largest-batch' });
  private readonly fewest = el('div', { id: 'nd-fewest-gpus' });
  private readonly applyButton: HTMLElement;
  private shown: Combination[] = [];
  private input: MemoryInput | undefined;

  constructor(private readonly actions: NdActions) {
    const select = (id: string, label: string, values: ReadonlyArray<string | number>) => {
      const s = el(
        'vscode-single-select',
        { id },
        ...values.map((v) => el('vscode-option', { value: String(v) }, String(v))),
      ) as Select;
      this.selects[id] = s;
      s.addEventListener('change', () => this.picked());
      return el('div', { class: 'field' }, el('vscode-label', { for: id }, label), s);
    };
    this.applyButton = el(
      'vscode-button',
      { id: 'nd-apply', secondary: '', title: 'write these degrees into the config' },
      'Apply degrees',
    );
    this.applyButton.addEventListener('click', () => {
      const d = this.degrees();
      if (d) this.actions.onApply({ knob: 'parallel', value: d });
    });
    const table = el(
      'table',
      { id: 'nd-table', class: 'grid' },
      el(
        'thead',
        {},
        el('tr', {}, ...['split', 'checkpointing', 'per GPU', 'headroom', 'speed'].map((h) => el('th', {}, h))),
      ),
      this.body,
    );
    this.element = el(
      'section',
      { class: 'nd-parallel', id: 'nd-parallel' },
      el('h3', {}, 'N-D parallelism: degrees'),
      el(
        'div',
        { class: 'controls' },
        select('nd-gpus', 'GPUs', GPU_COUNTS),
        select(
          'nd-tp',
          'Tensor',
          DEGREES.filter((d) => d <= 8),
        ),
        select(
          'nd-cp',
          'Context',
          DEGREES.filter((d) => d <= 8),
        ),
        select('nd-pp', 'Pipeline', DEGREES),
        select('nd-schedule', 'Schedule', PIPELINE_SCHEDULES),
        select('nd-ep', 'Expert', DEGREES),
        el('div', { class: 'field' }, el('vscode-label', {}, 'Data-parallel shard'), this.shard),
        this.applyButton,
      ),
      this.problem,
      el('h3', {}, 'Splits of these GPUs that fit, fastest-looking first'),
      el(
        'p',
        { class: 'nd-help' },
        'Speed is a heuristic (pipeline bubble, recomputation, tensor/context/expert communication), for choosing what to measure first. Click a row to try it.',
      ),
      table,
      this.largest,
      this.fewest,
    );
  }

  /** Shows the input's degrees; `canApply`: the config can take them (a torchtitan job config). */
  show(input: MemoryInput, canApply: boolean): void {
    this.input = input;
    // Only runs split by degrees (torchtitan configs) get the section: our runtime, PyTorch FSDP and
    // DeepSpeed configs have no tensor, context or pipeline parallel degree to set.
    this.element.hidden = !input.parallel;
    if (!input.parallel) return;
    const plan = planOf(input);
    const set = (id: string, v: string | number) => {
      const s = this.selects[id];
      if (!s.querySelector(`vscode-option[value="${v}"]`))
        s.append(el('vscode-option', { value: String(v) }, String(v)));
      if (s.value !== String(v)) s.value = String(v);
    };
    const world = plan.replicate * plan.shard * plan.cp * plan.tp * plan.pp;
    set('nd-gpus', world);
    set('nd-tp', plan.tp);
    set('nd-cp', plan.cp);
    set('nd-pp', plan.pp);
    set('nd-schedule', plan.schedule);
    set('nd-ep', plan.ep);
    this.shard.textContent = plan.replicate > 1 ? `${plan.shard} (× replicate ${plan.replicate})` : String(plan.shard);
    this.applyButton.hidden = !canApply;
    this.selects['nd-ep'].parentElement!.hidden = !plan.model.moe;
    this.problem.textContent = '';
  }

  /** The tables' work in pieces of a few estimates, as the other comparisons. */
  steps(input: MemoryInput, capacityBytes: number | undefined): Array<() => void> {
    if (!input.parallel) return [];
    if (capacityBytes === undefined) return [() => fill(this.body)];
    const plan = planOf(input);
    const world = plan.replicate * plan.shard * plan.cp * plan.tp * plan.pp;
    return [
      () => {
        this.shown = combinations(input, world, capacityBytes).slice(0, SHOWN);
        this.render(degreesOf(plan), capacityBytes);
      },
      () => {
        const b = largestMicroBatchNd(input, capacityBytes);
        fill(
          this.largest,
          b === 0
            ? 'Not even micro-batch 1 fits with these degrees.'
            : `Largest ${plan.pp > 1 ? 'pipeline ' : ''}micro-batch with these degrees: ${b}.`,
        );
      },
      () => {
        const few = fewestGpusAnyDegrees(input, capacityBytes);
        fill(
          this.fewest,
          few
            ? `Fewest GPUs with any degrees: ${few.gpus} (${splitWords(few.best.degrees)}, ${describePolicy(few.best.checkpointing)} checkpointing, ≈ ${formatBytes(few.best.estimate.peak.total)} per GPU).`
            : 'No split of up to 4096 GPUs fits.',
        );
      },
    ];
  }

  private render(current: Degrees, capacity: number): void {
    fill(
      this.body,
      ...this.shown.map((c) => {
        const row = el(
          'tr',
          {
            class: `${c.fits ? 'fits' : 'over'}${sameDegrees(c.degrees, current) ? ' current' : ''}`,
            'data-split': splitWords(c.degrees),
          },
          el('th', { class: 'try', title: 'try this split in the panel' }, splitWords(c.degrees)),
          el('td', {}, describePolicy(c.checkpointing)),
          el('td', { class: c.fits ? 'fits' : 'over' }, formatBytes(c.estimate.peak.total)),
          el(
            'td',
            {},
            c.fits
              ? formatBytes(capacity - c.estimate.peak.total)
              : `−${formatBytes(c.estimate.peak.total - capacity)}`,
          ),
          el('td', {}, `${Math.round(c.speed * 100)} %`),
        );
        row.addEventListener('click', () =>
          this.actions.onTry([
            { knob: 'parallel', value: c.degrees },
            { knob: 'checkpointing', value: c.checkpointing },
          ]),
        );
        return row;
      }),
    );
    if (!this.shown.length)
      fill(this.body, el('tr', {}, el('td', { colspan: '5' }, 'No split of this many GPUs suits the model.')));
  }

  private degrees(): Degrees | undefined {
    const n = (id: string) => Number(this.selects[id].value);
    const gpus = n('nd-gpus');
    const [tp, cp, pp, ep] = [n('nd-tp'), n('nd-cp'), n('nd-pp'), n('nd-ep')];
    const rest = gpus / (tp * cp * pp);
    if (!Number.isInteger(rest) || rest < 1) {
      this.problem.textContent = `${gpus} GPUs do not split into tensor ${tp} × context ${cp} × pipeline ${pp}.`;
      return undefined;
    }
    const replicate = this.input?.parallel?.replicate ?? 1;
    const keepReplicate = replicate > 1 && rest % replicate === 0 ? replicate : 1;
    if (ep > 1 && ((rest / keepReplicate) * cp * tp) % ep !== 0) {
      this.problem.textContent = `expert parallel ${ep} does not divide data-parallel shard × context × tensor = ${(rest / keepReplicate) * cp * tp}.`;
      return undefined;
    }
    return {
      replicate: keepReplicate,
      shard: rest / keepReplicate,
      tp,
      cp,
      pp,
      ep,
      schedule: this.selects['nd-schedule'].value as PipelineSchedule,
    };
  }

  private picked(): void {
    const d = this.degrees();
    if (d) this.actions.onTry([{ knob: 'parallel', value: d }]);
  }
}

export function splitWords(d: Degrees): string {
  const parts = [`dp ${d.replicate > 1 ? `${d.replicate}×${d.shard}` : d.shard}`];
  if (d.tp > 1) parts.push(`tp ${d.tp}`);
  if (d.cp > 1) parts.push(`cp ${d.cp}`);
  if (d.pp > 1) parts.push(`pp ${d.pp} ${d.schedule ?? '1F1B'}`);
  if (d.ep > 1) parts.push(`ep ${d.ep}`);
  return parts.join(' × ');
}

function sameDegrees(a: Degrees, b: Degrees): boolean {
  return (
    a.replicate === b.replicate &&
    a.shard === b.shard &&
    a.tp === b.tp &&
    a.cp === b.cp &&
    a.pp === b.pp &&
    a.ep === b.ep &&
    (a.pp === 1 || a.schedule === b.schedule)
  );
}
