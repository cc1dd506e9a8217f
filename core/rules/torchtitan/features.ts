// Rules about torchtitan features that depend on each other: float8 training and torch.compile,
// context parallel and the sequence length, selective activation checkpointing's option.
import type { ConfigProblem } from '../../config/schema-problems';
import { asNumber, isObject, report, valueAt, type ConfigRule } from '../rule';
import { readDegrees } from './degrees';

const FLOAT8 = ['quantize', 'linear', 'float8'];

function converters(value: Record<string, unknown>): string[] {
  const c = valueAt(value, ['model', 'converters']);
  if (Array.isArray(c)) return c.map(String);
  return typeof c === 'string' ? c.split(',') : [];
}

function compiled(value: Record<string, unknown>): boolean {
  const components = valueAt(value, ['compile', 'components']);
  const list = Array.isArray(components) ? components.map(String) : ['model', 'loss'];
  return valueAt(value, ['compile', 'enable']) === true && list.includes('model');
}

export const float8WithCompile: ConfigRule = {
  code: 'torchtitan.float8',
  why: 'torchtitan swaps nn.Linear for torchao\'s Float8Linear only when "float8" is among model.converters; float8 pays off with torch.compile, which fuses its casts (torchtitan\'s float8 docs run it with --compile.enable), emulation works only in eager mode, and a recipe cannot be combined with float8 all-gather.',
  source: 'torchtitan/components/quantization/float8.py: Float8LinearConverter.__init__; docs/float8.md',
  check(ctx) {
    const v = ctx.value;
    const on = converters(v).includes('float8');
    const section = valueAt(v, FLOAT8);
    const problems: ConfigProblem[] = [];
    if (!on) {
      const settings = isObject(section)
        ? Object.entries(section).filter(
            ([k, x]) =>
              (k === 'enable_fsdp_float8_all_gather' ||
                k === 'precompute_float8_dynamic_scale_for_fsdp' ||
                k === 'emulate') &&
              x === true,
          )
        : [];
      if (settings.length) {
        const list = converters(v);
        problems.push(
          report(ctx, this, {
            path: [...FLOAT8, settings[0][0]],
            part: 'key',
            severity: 'warning',
            message: `${settings.map(([k]) => k).join(', ')} ha${settings.length > 1 ? 've' : 's'} no effect: "float8" is not in model.converters`,
            fixes: [
              {
                title: 'Add "float8" to model.converters',
                preferred: true,
                edits: [{ kind: 'set', path: ['model', 'converters'], value: [...list, 'float8'] }],
              },
            ],
          }),
        );
      }
      return problems;
    }
    const emulate = isObject(section) && section.emulate === true;
    if (emulate && compiled(v)) {
      problems.push(
        report(ctx, this, {
          path: [...FLOAT8, 'emulate'],
          severity: 'error',
          message: 'float8 emulation works only in eager mode; torchtitan refuses it with compile.enable (model)',
          fixes: [
            {
              title: 'Set emulate = false',
              preferred: true,
              edits: [{ kind: 'set', path: [...FLOAT8, 'emulate'], value: false }],
            },
          ],
        }),
      );
    }
    if (isObject(section) && section.recipe_name !== undefined && section.enable_fsdp_float8_all_gather === true) {
      problems.push(
        report(ctx, this, {
          path: [...FLOAT8, 'enable_fsdp_float8_all_gather'],
          severity: 'error',
          message: `enable_fsdp_float8_all_gather cannot be used with recipe_name "${String(section.recipe_name)}" (torchtitan asserts it)`,
          fixes: [
            {
              title: 'Set enable_fsdp_float8_all_gather = false',
              preferred: true,
              edits: [{ kind: 'set', path: [...FLOAT8, 'enable_fsdp_float8_all_gather'], value: false }],
            },
          ],
        }),
      );
    }
    if (!emulate && !compiled(v)) {
      problems.push(
        report(ctx, this, {
          path: ['model', 'converters'],
          severity: 'warning',
          message:
            'float8 without torch.compile is usually slower than bf16: its casts are fused only when compiled; set compile.enable = true',
          fixes: [
            {
              title: 'Set compile.enable = true',
              preferred: true,
              edits: [{ kind: 'set', path: ['compile', 'enable'], value: true }],
            },
          ],
        }),
      );
    }
    return problems;
  },
};

export const contextParallelSequence: ConfigRule = {
  code: 'torchtitan.context-parallel',
  why: "Context parallel with the head-tail load balancer (torchtitan's default) cuts every sequence into 2 × context_parallel_degree chunks and asserts that seq_len divides evenly.",
  source:
    'torch/distributed/tensor/experimental/_context_parallel/_load_balancer.py: _HeadTailLoadBalancer; torchtitan/config/job_config.py: Parallelism.context_parallel_load_balancer',
  check(ctx) {
    const d = readDegrees(ctx);
    if (!d || d.cp === 1) return [];
    const t = isObject(ctx.value.training) ? ctx.value.training : {};
    const seq = asNumber(t.seq_len) ?? 2048;
    const balancer = valueAt(ctx.value, ['parallelism', 'context_parallel_load_balancer']);
    if (balancer !== undefined && balancer !== 'headtail') return [];
    if (seq % (2 * d.cp) === 0) return [];
    const fixed = Math.ceil(seq / (2 * d.cp)) * 2 * d.cp;
    return [
      report(ctx, this, {
        path: 'seq_len' in t ? ['training', 'seq_len'] : ['parallelism', 'context_parallel_degree'],
        severity: 'error',
        message: `seq_len ${seq} is not divisible by 2 × context_parallel_degree = ${2 * d.cp} (the head-tail load balancer's chunks)`,
        fixes:
          'seq_len' in t
            ? [
                {
                  title: `Set seq_len = ${fixed}`,
                  preferred: true,
                  edits: [{ kind: 'set', path: ['training', 'seq_len'], value: fixed }],
                },
              ]
            : undefined,
      }),
    ];
  },
};

export const selectiveCheckpointOption: ConfigRule = {
  code: 'torchtitan.selective-ac',
  why: 'Selective activation checkpointing takes "op" (per-op: save matmul and attention outputs) or a positive whole number N (checkpoint every N-th layer); torchtitan refuses anything else.',
  source: 'torchtitan/distributed/activation_checkpoint.py: _apply_layer_sac / apply_ac',
  check(ctx) {
    const ac = ctx.value.activation_checkpoint;
    if (!isObject(ac) || (ac.mode ?? 'selective') !== 'selective' || ac.selective_ac_option === undefined) return [];
    const option = String(ac.selective_ac_option);
    if (option === 'op' || (/^\d+$/.test(option) && Number(option) >= 1)) return [];
    return [
      report(ctx, this, {
        path: ['activation_checkpoint', 'selective_ac_option'],
        severity: 'error',
        message: `selective_ac_option must be "op" or a positive whole number as a string (every N-th layer), got ${JSON.stringify(ac.selective_ac_option)}`,
        fixes: [
          {
            title: 'Set selective_ac_option = "op"',
            preferred: true,
            edits: [{ kind: 'set', path: ['activation_checkpoint', 'selective_ac_option'], value: 'op' }],
          },
        ],
      }),
    ];
  },
};
