// The what-if views of the panel: strategies side by side at several GPU counts, the largest
// micro-batch on each GPU type, and what each knob would save (with "apply" to the config).
// The tables are built once and then only their texts and classes change, so an update costs
// the estimates, not the DOM.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import { estimateMemory } from '../../core/memory/estimate';
import { GPU_PRESETS } from '../../core/memory/gpu-presets';
import { knobEffects, maxMicroBatch, type KnobEffect } from '../../core/memory/inverse-questions';
import type { MemoryChange } from '../../core/memory/memory-change';
import { SHARDING_STRATEGIES, type MemoryInput, type ShardingStrategy } from '../../core/memory/memory-input';
import { formatBytes } from '../../core/memory/summary';
import { el } from './dom';

const GPU_COUNTS = [1, 2, 4, 8];

export interface ComparisonActions {
  /** Try changes in the panel only. */
  onTry(changes: MemoryChange[]): void;
  /** Write a change into the config. */
  onApply(change: MemoryChange): void;
}

interface KnobRow {
  row: HTMLElement;
  label: HTMLElement;
  peak: HTMLElement;
  saved: HTMLElement;
  effect?: KnobEffect;
}

export class Comparisons {
  readonly element: HTMLElement;
  private readonly strategyCells = new Map<string, HTMLElement>();
  private readonly strategyRows = new Map<ShardingStrategy, HTMLElement>();
  private readonly gpuCells = new Map<string, { row: HTMLElement; cell: HTMLElement; batch: number }>();
  private readonly knobBody = el('tbody');
  private readonly knobRows: KnobRow[] = [];

  constructor(private readonly actions: ComparisonActions) {
    const strategies = el(
      'table',
      { id: 'strategy-table', class: 'grid' },
      el('tr', {}, el('th', {}, ''), ...GPU_COUNTS.map((n) => el('th', {}, `${n}`))),
    );
    for (const strategy of SHARDING_STRATEGIES) {
      const cells = GPU_COUNTS.map((n) => {
        const cell = el('td', { title: `${strategy} on ${n} GPU(s) per node` });
        cell.addEventListener('click', () =>
          actions.onTry([
            { knob: 'strategy', value: strategy },
            { knob: 'nproc', value: n },
          ]),
        );
        this.strategyCells.set(`${strategy}/${n}`, cell);
        return cell;
      });
      const row = el('tr', { 'data-strategy': strategy }, el('th', {}, strategy), ...cells);
      this.strategyRows.set(strategy, row);
      strategies.append(row);
    }
    const gpus = el(
      'table',
      { id: 'max-batch-table', class: 'grid' },
      el('tr', {}, el('th', {}, 'GPU'), el('th', {}, 'micro-batch')),
    );
    for (const gpu of GPU_PRESETS) {
      const cell = el('td');
      const row = el('tr', { 'data-gpu': gpu.id }, el('th', {}, gpu.name), cell);
      const entry = { row, cell, batch: 0 };
      row.addEventListener('click', () =>
        actions.onTry(
          entry.batch > 0
            ? [
                { knob: 'gpu', value: gpu.id },
                { knob: 'microBatch', value: entry.batch },
              ]
            : [{ knob: 'gpu', value: gpu.id }],
        ),
      );
      this.gpuCells.set(gpu.id, entry);
      gpus.append(row);
    }
    const knobs = el(
      'table',
      { id: 'knob-table', class: 'grid' },
      el(
        'thead',
        {},
        el('tr', {}, el('th', {}, 'change'), el('th', {}, 'peak'), el('th', {}, 'Δ peak'), el('th', {}, '')),
      ),
      this.knobBody,
    );
    this.element = el(
      'div',
      { class: 'comparisons' },
      el('section', {}, el('h3', {}, 'Strategies × GPUs per node'), strategies),
      el('section', {}, el('h3', {}, 'Largest micro-batch per GPU'), gpus),
      el('section', {}, el('h3', {}, 'What each knob does'), knobs),
    );
  }

  update(input: MemoryInput, capacityBytes: number | undefined): void {
    for (const step of this.steps(input, capacityBytes)) step();
  }

  /**
   * The update in pieces of a few estimates each, so the panel can spread it over frames (a
   * PyTorch estimate replays the run and takes milliseconds).
   */
  steps(input: MemoryInput, capacityBytes: number | undefined): Array<() => void> {
    const steps: Array<() => void> = [];
    for (const strategy of SHARDING_STRATEGIES) {
      steps.push(() => {
        // torchtitan splits by degrees (the N-D section), not by a sharding strategy.
        const shown =
          !(strategy === 'HYBRID_SHARD' && input.framework === 'deepspeed') && input.framework !== 'torchtitan';
        this.strategyRows.get(strategy)!.hidden = !shown;
        if (!shown) return;
        for (const n of GPU_COUNTS) {
          const peak = estimateMemory({ ...input, strategy, nprocPerNode: n }).peak.total;
          const cell = this.strategyCells.get(`${strategy}/${n}`)!;
          cell.textContent = formatBytes(peak);
          cell.className = `${fitClass(peak, capacityBytes)}${strategy === input.strategy && n === input.nprocPerNode ? ' current' : ''}`;
        }
      });
    }
    for (const gpu of GPU_PRESETS) {
      steps.push(() => {
        const entry = this.gpuCells.get(gpu.id)!;
        entry.batch = maxMicroBatch({ ...input, gpu }, gpu.memoryBytes);
        entry.cell.textContent = entry.batch === 0 ? 'does not fit' : String(entry.batch);
        entry.cell.className = entry.batch >= input.microBatch ? 'fits' : 'over';
        entry.row.className = input.gpu?.id === gpu.id ? 'current' : '';
      });
    }
    steps.push(() => this.updateKnobs(knobEffects(input), capacityBytes));
    return steps;
  }

  private updateKnobs(effects: KnobEffect[], capacity: number | undefined): void {
    while (this.knobRows.length < effects.length) this.knobRows.push(this.knobRow());
    this.knobRows.forEach((r, i) => {
      const k = effects[i];
      r.effect = k;
      r.row.hidden = !k;
      if (!k) return;
      r.row.dataset.knob = k.change.knob;
      r.label.textContent = k.label;
      r.peak.textContent = formatBytes(k.peakBytes);
      r.peak.className = fitClass(k.peakBytes, capacity);
      r.saved.textContent = k.savedBytes >= 0 ? `−${formatBytes(k.savedBytes)}` : `+${formatBytes(-k.savedBytes)}`;
    });
  }

  private knobRow(): KnobRow {
    const label = el('th', { class: 'try', title: 'try it in the panel' });
    const peak = el('td');
    const saved = el('td');
    const apply = el('vscode-button', { secondary: '', title: 'write this change into the config' }, 'Apply');
    const row = el('tr', {}, label, peak, saved, el('td', {}, apply));
    const r: KnobRow = { row, label, peak, saved };
    label.addEventListener('click', () => r.effect && this.actions.onTry([r.effect.change]));
    apply.addEventListener('click', () => r.effect && this.actions.onApply(r.effect.change));
    this.knobBody.append(row);
    return r;
  }
}

function fitClass(bytes: number, capacity: number | undefined): string {
  return capacity === undefined ? '' : bytes <= capacity ? 'fits' : 'over';
}
