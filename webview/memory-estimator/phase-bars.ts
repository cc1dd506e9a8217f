// Stacked bars, one per phase (end of forward, backward, optimizer step), one segment per
// category, against a line at the target's capacity: where the memory goes, and when.
import { MEMORY_CATEGORIES, type MemoryEstimate } from '../../core/memory/memory-estimate';
import { formatBytes } from '../../core/memory/summary';
import { el, fill } from './dom';

interface Row {
  bar: HTMLElement;
  segments: Map<string, HTMLElement>;
  marker: HTMLElement;
  total: HTMLElement;
}

export class PhaseBars {
  readonly element: HTMLElement;
  private readonly rows = new Map<string, Row>();
  private readonly capacityLabel = el('div', { class: 'capacity-label' });

  constructor() {
    const bars = (['forward', 'backward', 'optimizer'] as const).map((phase) => {
      const segments = new Map(
        MEMORY_CATEGORIES.map((c) => [c, el('div', { class: `segment cat-${c}`, 'data-category': c })]),
      );
      const marker = el('div', { class: 'capacity', title: 'capacity of the target' });
      const total = el('span', { class: 'phase-total' });
      const bar = el(
        'div',
        { class: 'phase-bar', 'data-phase': phase },
        el('span', { class: 'phase-name' }, phase),
        el('div', { class: 'track' }, ...segments.values(), marker),
        total,
      );
      this.rows.set(phase, { bar, segments, marker, total });
      return bar;
    });
    const legend = el(
      'div',
      { class: 'legend' },
      ...MEMORY_CATEGORIES.map((c) =>
        el('span', { class: 'legend-item' }, el('span', { class: `swatch cat-${c}` }), c),
      ),
    );
    this.element = el('div', { class: 'phase-bars' }, ...bars, this.capacityLabel, legend);
  }

  update(e: MemoryEstimate, capacityBytes: number | undefined, capacityName: string | undefined): void {
    const scale = Math.max(capacityBytes ?? 0, ...e.phases.map((p) => p.bytes.total)) * 1.05 || 1;
    for (const p of e.phases) {
      const row = this.rows.get(p.phase)!;
      for (const c of MEMORY_CATEGORIES) {
        const seg = row.segments.get(c)!;
        seg.style.width = `${(100 * p.bytes[c]) / scale}%`;
        seg.dataset.bytes = String(Math.round(p.bytes[c]));
        seg.title = `${c}: ${formatBytes(p.bytes[c])}`;
      }
      row.total.textContent = formatBytes(p.bytes.total);
      row.bar.dataset.bytes = String(Math.round(p.bytes.total));
      row.bar.classList.toggle('peak', p.phase === e.peakPhase);
      row.bar.classList.toggle('over', capacityBytes !== undefined && p.bytes.total > capacityBytes);
      row.marker.hidden = capacityBytes === undefined;
      if (capacityBytes !== undefined) row.marker.style.left = `${(100 * capacityBytes) / scale}%`;
    }
    fill(this.capacityLabel, capacityBytes === undefined ? '' : `│ ${capacityName}: ${formatBytes(capacityBytes)}`);
  }
}
