// The panel's controls: the knobs of a run, shown with @vscode-elements components. Reading them
// gives a change to the working input; writing them shows an input's values.
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-label/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { GPU_PRESETS } from '../../core/memory/gpu-presets';
import type { MemoryChange } from '../../core/memory/memory-change';
import { SHARDING_STRATEGIES, type MemoryInput } from '../../core/memory/memory-input';
import { el } from './dom';

/** The GPU select's value for "this machine's memory" (CPU runs of our runtime). */
export const HOST_TARGET = 'host';

const CHECKPOINTING = [
  ['none', 'none'],
  ['selective', 'selective'],
  ['every_n:1', 'every block'],
  ['every_n:2', 'every 2 blocks'],
  ['every_n:4', 'every 4 blocks'],
] as const;

interface ValueElement extends HTMLElement {
  value: string;
  checked: boolean;
}

export class Controls {
  readonly element: HTMLElement;
  private readonly fields: Record<string, ValueElement> = {};

  constructor(onChange: (change: MemoryChange) => void) {
    const field = (id: string, label: string, control: HTMLElement) => {
      this.fields[id] = control as ValueElement;
      return el('div', { class: 'field' }, el('vscode-label', { for: id }, label), control);
    };
    const select = (id: string, options: ReadonlyArray<readonly [string, string]>) =>
      el('vscode-single-select', { id }, ...options.map(([value, label]) => el('vscode-option', { value }, label)));
    this.element = el(
      'div',
      { class: 'controls' },
      field('micro-batch', 'Micro-batch', el('vscode-textfield', { id: 'micro-batch', type: 'number', min: '1' })),
      field(
        'strategy',
        'Sharding',
        select(
          'strategy',
          SHARDING_STRATEGIES.map((s) => [s, s] as const),
        ),
      ),
      field('checkpointing', 'Checkpointing', select('checkpointing', CHECKPOINTING)),
      field(
        'precision',
        'Precision',
        select('precision', [
          ['float32', 'fp32'],
          ['bfloat16', 'bf16 mixed'],
        ]),
      ),
      field('nproc', 'GPUs per node', el('vscode-textfield', { id: 'nproc', type: 'number', min: '1' })),
      field(
        'gpu',
        'Target',
        select('gpu', [...GPU_PRESETS.map((g) => [g.id, g.name] as const), [HOST_TARGET, 'this machine']]),
      ),
      field('offload', 'Offload', el('vscode-checkbox', { id: 'offload' }, 'CPU offload')),
    );
    const read = (id: string): MemoryChange | undefined => {
      const f = this.fields[id];
      switch (id) {
        case 'micro-batch':
        case 'nproc': {
          const n = Number(f.value);
          if (!Number.isInteger(n) || n < 1) return undefined; // mid-typing ("", "0"): wait
          return id === 'nproc' ? { knob: 'nproc', value: n } : { knob: 'microBatch', value: n };
        }
        case 'strategy':
          return { knob: 'strategy', value: f.value as MemoryInput['strategy'] };
        case 'checkpointing': {
          if (f.value === 'auto') return undefined; // shown for a config that asks for auto; not a change
          const [policy, n] = f.value.split(':');
          return {
            knob: 'checkpointing',
            value: { policy: policy as 'none' | 'selective' | 'every_n', everyN: Number(n ?? 1) },
          };
        }
        case 'precision':
          return { knob: 'precision', value: f.value as 'float32' | 'bfloat16' };
        case 'offload':
          return { knob: 'offload', value: f.checked };
        default:
          return { knob: 'gpu', value: f.value };
      }
    };
    for (const id of Object.keys(this.fields)) {
      const handler = () => {
        const change = read(id);
        if (change) onChange(change);
      };
      this.fields[id].addEventListener('input', handler);
      this.fields[id].addEventListener('change', handler);
    }
  }

  /** Shows an input's values (without firing change events). */
  show(input: MemoryInput, gpuId: string): void {
    // torchtitan splits by degrees (the N-D section): no sharding strategy, the GPUs follow the degrees.
    for (const id of ['strategy', 'nproc']) this.fields[id].parentElement!.hidden = input.framework === 'torchtitan';
    const set = (id: string, value: string) => {
      if (this.fields[id].value !== value) this.fields[id].value = value;
    };
    set('micro-batch', String(input.microBatch));
    set('strategy', input.strategy);
    const c = input.checkpointing;
    const policy = c.policy === 'every_n' ? `every_n:${c.everyN}` : c.policy;
    // A config may ask for a policy the list does not offer (every 3 blocks, auto): add it.
    const select = this.fields.checkpointing;
    if (!select.querySelector(`vscode-option[value="${policy}"]`))
      select.append(
        el(
          'vscode-option',
          { value: policy },
          policy === 'auto' ? 'auto (fits the budget)' : `every ${c.everyN} blocks`,
        ),
      );
    set('checkpointing', policy);
    set('precision', input.precision.param === 'float32' ? 'float32' : 'bfloat16');
    set('nproc', String(input.nprocPerNode));
    set('gpu', gpuId);
    this.fields.offload.checked = input.offload.optimizer;
  }
}
