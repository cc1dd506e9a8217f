// Optimizer rules: DeepSpeed's compressed-communication optimizers and LAMB have requirements of
// their own (deepspeed/runtime/engine.py).
import { asNumber, isObject, report, type ConfigRule } from '../rule';
import { zeroStage } from './zero-stage';

function optimizerType(value: Record<string, unknown>): string | undefined {
  const opt = value.optimizer;
  return isObject(opt) && typeof opt.type === 'string' ? opt.type.toLowerCase() : undefined;
}

const ONE_BIT = ['onebitadam', 'zerooneadam', 'onebitlamb'];

export const oneBitWithZero: ConfigRule = {
  code: 'deepspeed.onebit-zero',
  why: '1-bit Adam, 0/1 Adam and 1-bit LAMB compress the gradient all-reduce themselves and do not work with ZeRO: DeepSpeed asserts "1bit-Adam is not compatible with ZeRO" (and likewise for the others).',
  source: 'deepspeed/runtime/engine.py: DeepSpeedEngine._configure_basic_optimizer',
  check(ctx) {
    const type = optimizerType(ctx.value);
    const stage = zeroStage(ctx.value);
    if (!type || !ONE_BIT.includes(type) || typeof stage !== 'number' || stage === 0) return [];
    return [
      report(ctx, this, {
        path: ['optimizer', 'type'],
        severity: 'error',
        message: `${(ctx.value.optimizer as { type: string }).type} is not compatible with ZeRO (stage ${stage}); set zero_optimization.stage to 0 or use Adam/Lamb`,
        fixes: [
          {
            title: 'Set zero_optimization.stage to 0',
            edits: [{ kind: 'set', path: ['zero_optimization', 'stage'], value: 0 }],
          },
        ],
      }),
    ];
  },
};

export const lambNeedsDynamicScaling: ConfigRule = {
  code: 'deepspeed.lamb-static-loss-scale',
  why: "DeepSpeed's LAMB and 1-bit LAMB optimizers require dynamic loss scaling: the engine asserts it, and a non-zero fp16.loss_scale selects a static scale.",
  source:
    'deepspeed/runtime/engine.py: DeepSpeedEngine._do_sanity_check ("DeepSpeed {} optimizer requires dynamic loss scaling"), dynamic_loss_scale',
  check(ctx) {
    const type = optimizerType(ctx.value);
    const fp16 = ctx.value.fp16;
    const scale = isObject(fp16) ? asNumber(fp16.loss_scale) : undefined;
    if ((type !== 'lamb' && type !== 'onebitlamb') || !scale) return [];
    return [
      report(ctx, this, {
        path: ['fp16', 'loss_scale'],
        severity: 'error',
        message: `${(ctx.value.optimizer as { type: string }).type} needs dynamic loss scaling; fp16.loss_scale ${scale} makes it static`,
        fixes: [
          {
            title: 'Use dynamic loss scaling (loss_scale 0)',
            preferred: true,
            edits: [{ kind: 'set', path: ['fp16', 'loss_scale'], value: 0 }],
          },
        ],
      }),
    ];
  },
};
