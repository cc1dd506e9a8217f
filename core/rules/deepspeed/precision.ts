// DeepSpeed mixed-precision rules: which precision modes exclude each other, what needs ZeRO, and
// which dynamic loss-scaling parameters break training.
import { asNumber, isObject, report, type ConfigRule } from '../rule';
import { bf16Path, enabled, zeroStage } from './zero-stage';

export const fp16AndBf16: ConfigRule = {
  code: 'deepspeed.fp16-and-bf16',
  why: 'DeepSpeed runs in one precision mode: it asserts that fp16 and bf16 are not both enabled.',
  source:
    'deepspeed/runtime/config.py: DeepSpeedConfig._initialize_params ("bfloat16 and fp16 modes cannot be simultaneously enabled")',
  check(ctx) {
    const bf = bf16Path(ctx.value);
    if (!enabled(ctx.value.fp16) || !enabled(ctx.value[bf])) return [];
    return [
      report(ctx, this, {
        path: [bf, 'enabled'],
        severity: 'error',
        message: 'fp16 and bf16 are both enabled; DeepSpeed refuses to start. Keep one',
        fixes: [
          { title: 'Disable fp16 (keep bf16)', edits: [{ kind: 'set', path: ['fp16', 'enabled'], value: false }] },
          { title: 'Disable bf16 (keep fp16)', edits: [{ kind: 'set', path: [bf, 'enabled'], value: false }] },
        ],
      }),
    ];
  },
};

const NEEDS_ZERO: Array<[section: 'fp16' | 'bf16', key: string]> = [
  ['fp16', 'fp16_master_weights_and_grads'],
  ['bf16', 'bf16_master_weights_and_grads'],
  ['bf16', 'bf16_optimizer_states'],
];

export const masterWeightsNeedZero: ConfigRule = {
  code: 'deepspeed.master-weights-need-zero',
  why: 'Low-precision master weights and optimizer states are implemented by the ZeRO optimizers only: DeepSpeed asserts ZeRO stage 1, 2 or 3, and bf16_optimizer_states also needs bf16_master_weights_and_grads.',
  source: 'deepspeed/runtime/config.py: DeepSpeedConfig._do_error_check',
  check(ctx) {
    const stage = zeroStage(ctx.value);
    const problems = [];
    for (const [section, key] of NEEDS_ZERO) {
      const name = section === 'bf16' ? bf16Path(ctx.value) : section;
      const block = ctx.value[name];
      if (!isObject(block) || block[key] !== true) continue;
      if (stage === 0) {
        problems.push(
          report(ctx, this, {
            path: [name, key],
            part: 'key',
            severity: 'error',
            message: `${key} needs ZeRO stage 1, 2 or 3; zero_optimization.stage is 0`,
            fixes: [{ title: `Remove ${key}`, edits: [{ kind: 'remove', path: [name, key] }] }],
          }),
        );
      } else if (key === 'bf16_optimizer_states' && block.bf16_master_weights_and_grads !== true) {
        problems.push(
          report(ctx, this, {
            path: [name, key],
            part: 'key',
            severity: 'error',
            message: 'bf16_optimizer_states needs bf16_master_weights_and_grads: true',
            fixes: [
              {
                title: 'Set bf16_master_weights_and_grads: true',
                preferred: true,
                edits: [{ kind: 'set', path: [name, 'bf16_master_weights_and_grads'], value: true }],
              },
            ],
          }),
        );
      }
    }
    return problems;
  },
};

export const dynamicLossScale: ConfigRule = {
  code: 'deepspeed.loss-scale-range',
  why: 'With dynamic loss scaling (fp16 enabled, loss_scale 0) the scaler divides by loss_scale_window, never lowers the scale below min_loss_scale, and lowers it only after hysteresis overflows: a window or minimum of 0 is rejected, a hysteresis below 1 means the scale never drops.',
  source:
    'deepspeed/runtime/precision_config.py: DeepSpeedFP16Config._validate_dynamic_loss_scale_params; deepspeed/runtime/fp16/loss_scaler.py: DynamicLossScaler.update_scale',
  check(ctx) {
    const fp16 = ctx.value.fp16;
    if (!enabled(fp16) || !isObject(fp16) || (asNumber(fp16.loss_scale) ?? 0) !== 0) return [];
    const problems = [];
    const at = (key: string) => asNumber(fp16[key]);
    const window = at('loss_scale_window');
    if (window !== undefined && window <= 0)
      problems.push(
        report(ctx, this, {
          path: ['fp16', 'loss_scale_window'],
          severity: 'error',
          message: `loss_scale_window must be > 0 with dynamic loss scaling (loss_scale 0), got ${window}`,
        }),
      );
    const min = at('min_loss_scale');
    if (min !== undefined && min <= 0)
      problems.push(
        report(ctx, this, {
          path: ['fp16', 'min_loss_scale'],
          severity: 'error',
          message: `min_loss_scale must be > 0 with dynamic loss scaling, got ${min}`,
        }),
      );
    const hysteresis = at('hysteresis');
    if (hysteresis !== undefined && hysteresis < 1)
      problems.push(
        report(ctx, this, {
          path: ['fp16', 'hysteresis'],
          severity: 'error',
          message: `hysteresis ${hysteresis} < 1: the dynamic loss scale would never be lowered after an overflow`,
        }),
      );
    const power = at('initial_scale_power');
    if (power !== undefined && min !== undefined && min > 0 && 2 ** power < min) {
      problems.push(
        report(ctx, this, {
          path: ['fp16', 'initial_scale_power'],
          severity: 'warning',
          message: `the initial loss scale 2^${power} = ${2 ** power} is below min_loss_scale ${min}`,
        }),
      );
    }
    return problems;
  },
};

export const ampConflicts: ConfigRule = {
  code: 'deepspeed.amp-conflict',
  why: 'Apex AMP is an alternative to DeepSpeed\'s own fp16/bf16 modes and does not work with the ZeRO optimizers: DeepSpeed asserts "Amp and ZeRO are not currently compatible" and raises "Cannot enable both amp with (legacy) fp16 or bfloat16 mode".',
  source: 'deepspeed/runtime/engine.py: DeepSpeedEngine._do_optimizer_sanity_check',
  check(ctx) {
    if (!enabled(ctx.value.amp)) return [];
    const problems = [];
    const stage = zeroStage(ctx.value);
    if (typeof stage === 'number' && stage > 0) {
      problems.push(
        report(ctx, this, {
          path: ['amp', 'enabled'],
          severity: 'error',
          message: `amp is not compatible with ZeRO (stage ${stage}); use fp16 instead of amp, or ZeRO stage 0`,
        }),
      );
    }
    const bf = bf16Path(ctx.value);
    for (const mode of ['fp16', bf]) {
      if (enabled(ctx.value[mode]))
        problems.push(
          report(ctx, this, {
            path: ['amp', 'enabled'],
            severity: 'error',
            message: `amp and ${mode} cannot both be enabled`,
            fixes: [{ title: 'Disable amp', edits: [{ kind: 'set', path: ['amp', 'enabled'], value: false }] }],
          }),
        );
    }
    return problems;
  },
};
