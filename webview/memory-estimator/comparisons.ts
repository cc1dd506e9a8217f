// The what-if views of the panel: strategies side by side at several GPU counts, the largest
// micro-batch on each GPU type, and what each knob would save (with "apply" to the config).
import '@vscode-elements/elements/dist/vscode-button/index.js';
import { estimateMemory } from '../../core/memory/estimate';
import { GPU_PRESETS } from '../../core/memory/gpu-presets';
import { knobEffects, maxMicroBatch } from '../../core/memory/inverse-questions';
import type { MemoryChange } from '../../core/memory/memory-change';
import { SHARDING_STRATEGIES, type MemoryInput } from '../../core/memory/memory-input';
import { formatBytes } from '../../core/memory/summary';
import { el, fill } from './dom';

const GPU_COUNTS = [1, 2, 4, 8];

export interface ComparisonActions {
  /** Try a change in the panel only. */
  onTry(change: MemoryChange[]): void;
  /** Write a change into the config. */
  onApply(change: MemoryChange): void;
}

export class Comparisons {
  readonly element: HTMLElement;
  private readonly strategies = el('table', { id: 'strategy-table', class: 'grid' });
  private readonly gpus = el('table', { id: 'max-batch-table', class: 'grid' });
  private readonly knobs = el('table', { id: 'knob-table', class: 'grid' });

  constructor(private readonly actions: ComparisonActions) {
    this.element = el(
      'div',
      { class: 'comparisons' },
      el('section', {}, el('h3', {}, 'Strategies × GPUs per node'), this.strategies),
      el('section', {}, el('h3', {}, 'Largest micro-batch per GPU'), this.gpus),
      el('section', {}, el('h3', {}, 'What each knob does'), this.knobs),
    );
  }

  update(input: MemoryInput, capacityBytes: number | undefined): void {
    this.updateStrategies(input, capacityBytes);
    this.updateGpus(input);
    this.updateKnobs(input, capacityBytes);
  }

  private updateStrategies(input: MemoryInput, capacity: number | undefined): void {
    const strategies = SHARDING_STRATEGIES.filter((s) => !(s === 'HYBRID_SHARD' && input.framework === 'deepspeed'));
    const head = el('tr', {}, el('th', {}, ''), ...GPU_COUNTS.map((n) => el('th', {}, `${n}`)));
    const rows = strategies.map((strategy) =>
      el(
        'tr',
        { 'data-strategy': strategy },
        el('th', {}, strategy),
        ...GPU_COUNTS.map((n) => {
          const peak = estimateMemory({ ...input, strategy, nprocPerNode: n }).peak.total;
          const current = strategy === input.strategy && n === input.nprocPerNode;
          const cell = el('td', { class: `${fitClass(peak, capacity)}${current ? ' current' : ''}`, title: `${strategy} on ${n} GPU(s) per node` }, formatBytes(peak));
          cell.addEventListener('click', () => this.actions.onTry([{ knob: 'strategy', value: strategy }, { knob: 'nproc', value: n }]));
          return cell;
        }),
      ),
    );
    fill(this.strategies, head, ...rows);
  }

  private updateGpus(input: MemoryInput): void {
    const rows = GPU_PRESETS.map((gpu) => {
      const b = maxMicroBatch({ ...input, gpu }, gpu.memoryBytes);
      const cell = el('td', { class: b >= input.microBatch ? 'fits' : 'over' }, b === 0 ? 'does not fit' : String(b));
      const row = el('tr', { 'data-gpu': gpu.id, class: input.gpu?.id === gpu.id ? 'current' : '' }, el('th', {}, gpu.name), cell);
      row.addEventListener('click', () => this.actions.onTry(b > 0 ? [{ knob: 'gpu', value: gpu.id }, { knob: 'microBatch', value: b }] : [{ knob: 'gpu', value: gpu.id }]));
      return row;
    });
    fill(this.gpus, el('tr', {}, el('th', {}, 'GPU'), el('th', {}, 'micro-batch')), ...rows);
  }

  private updateKnobs(input: MemoryInput, capacity: number | undefined): void {
    const rows = knobEffects(input).map((k) => {
      const apply = el('vscode-button', { secondary: '', title: `write ${k.label} into the config` }, 'Apply');
      apply.addEventListener('click', () => this.actions.onApply(k.change));
      const label = el('th', { class: 'try', title: 'try it in the panel' }, k.label);
      label.addEventListener('click', () => this.actions.onTry([k.change]));
      const saved = k.savedBytes >= 0 ? `−${formatBytes(k.savedBytes)}` : `+${formatBytes(-k.savedBytes)}`;
      return el('tr', { 'data-knob': k.change.knob }, label, el('td', { class: fitClass(k.peakBytes, capacity) }, formatBytes(k.peakBytes)), el('td', {}, saved), el('td', {}, apply));
    });
    fill(this.knobs, el('tr', {}, el('th', {}, 'change'), el('th', {}, 'peak'), el('th', {}, 'saves'), el('th', {}, '')), ...rows);
  }
}

function fitClass(bytes: number, capacity: number | undefined): string {
  return capacity === undefined ? '' : bytes <= capacity ? 'fits' : 'over';
}
