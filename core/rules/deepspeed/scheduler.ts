// The scheduler section: DeepSpeed looks the type up among its own schedulers, then among
// torch.optim.lr_scheduler, and calls it with `params` as keyword arguments, so an unknown type
// stops start-up ("DeepSpeed does not recognize LR scheduler") and a misspelled or missing
// parameter is a TypeError. Sources: deepspeed/runtime/engine.py: DeepSpeedEngine._scheduler_from_config;
// deepspeed/runtime/lr_schedules.py: the constructors of LRRangeTest, OneCycle, WarmupLR,
// WarmupDecayLR, WarmupCosineLR.
import { closestMatch } from '../../config/did-you-mean';
import type { ConfigProblem } from '../../config/schema-problems';
import { isObject, report, type ConfigRule } from '../rule';

interface Signature {
  params: string[];
  required: string[];
}

const DEEPSPEED_SCHEDULERS: Record<string, Signature> = {
  LRRangeTest: {
    params: [
      'lr_range_test_min_lr',
      'lr_range_test_step_size',
      'lr_range_test_step_rate',
      'lr_range_test_staircase',
      'last_batch_iteration',
    ],
    required: [],
  },
  OneCycle: {
    params: [
      'cycle_min_lr',
      'cycle_max_lr',
      'decay_lr_rate',
      'cycle_first_step_size',
      'cycle_second_step_size',
      'cycle_first_stair_count',
      'cycle_second_stair_count',
      'decay_step_size',
      'cycle_momentum',
      'cycle_min_mom',
      'cycle_max_mom',
      'decay_mom_rate',
      'last_batch_iteration',
    ],
    required: ['cycle_min_lr', 'cycle_max_lr'],
  },
  WarmupLR: {
    params: ['warmup_min_lr', 'warmup_max_lr', 'warmup_num_steps', 'warmup_type', 'last_batch_iteration'],
    required: [],
  },
  WarmupDecayLR: {
    params: [
      'total_num_steps',
      'warmup_min_lr',
      'warmup_max_lr',
      'warmup_num_steps',
      'warmup_type',
      'last_batch_iteration',
    ],
    required: ['total_num_steps'],
  },
  WarmupCosineLR: {
    params: [
      'total_num_steps',
      'warmup_min_ratio',
      'warmup_num_steps',
      'cos_min_ratio',
      'warmup_type',
      'last_batch_iteration',
    ],
    required: ['total_num_steps'],
  },
};

// torch.optim.lr_scheduler's classes, which DeepSpeed falls back to (their parameters are torch's).
const TORCH_SCHEDULERS = [
  'LambdaLR',
  'MultiplicativeLR',
  'StepLR',
  'MultiStepLR',
  'ConstantLR',
  'LinearLR',
  'ExponentialLR',
  'SequentialLR',
  'CosineAnnealingLR',
  'ChainedScheduler',
  'ReduceLROnPlateau',
  'CyclicLR',
  'CosineAnnealingWarmRestarts',
  'OneCycleLR',
  'PolynomialLR',
];

export const schedulerParameters: ConfigRule = {
  code: 'deepspeed.scheduler',
  why: "DeepSpeed builds the scheduler by name (its own, else torch.optim.lr_scheduler's) and passes params as keyword arguments: an unknown name stops start-up, an unknown or missing parameter is a TypeError.",
  source:
    'deepspeed/runtime/engine.py: DeepSpeedEngine._scheduler_from_config; deepspeed/runtime/lr_schedules.py (scheduler constructors)',
  check(ctx) {
    const scheduler = ctx.value.scheduler;
    if (!isObject(scheduler) || typeof scheduler.type !== 'string') return [];
    const type = scheduler.type;
    const signature = DEEPSPEED_SCHEDULERS[type];
    if (!signature) {
      if (TORCH_SCHEDULERS.includes(type)) return [];
      const suggestion = closestMatch(type, [...Object.keys(DEEPSPEED_SCHEDULERS), ...TORCH_SCHEDULERS]);
      return [
        report(ctx, this, {
          path: ['scheduler', 'type'],
          severity: 'error',
          message: `DeepSpeed does not recognize the scheduler "${type}"${suggestion ? `; did you mean "${suggestion}"?` : `: use ${Object.keys(DEEPSPEED_SCHEDULERS).join(', ')} or a torch.optim.lr_scheduler class`}`,
          fixes: suggestion
            ? [
                {
                  title: `Change to ${suggestion}`,
                  preferred: true,
                  edits: [{ kind: 'set', path: ['scheduler', 'type'], value: suggestion }],
                },
              ]
            : undefined,
        }),
      ];
    }
    const params = isObject(scheduler.params) ? scheduler.params : {};
    const problems: ConfigProblem[] = [];
    for (const key of Object.keys(params)) {
      if (signature.params.includes(key)) continue;
      const suggestion = closestMatch(key, signature.params);
      problems.push(
        report(ctx, this, {
          path: ['scheduler', 'params', key],
          part: 'key',
          severity: 'error',
          message: `${type} has no parameter "${key}"${suggestion ? `; did you mean "${suggestion}"?` : `; it takes ${signature.params.join(', ')}`}`,
          fixes:
            suggestion && !(suggestion in params)
              ? [
                  {
                    title: `Rename to ${suggestion}`,
                    preferred: true,
                    edits: [{ kind: 'rename', path: ['scheduler', 'params', key], to: suggestion }],
                  },
                ]
              : undefined,
        }),
      );
    }
    for (const key of signature.required.filter((k) => !(k in params))) {
      problems.push(
        report(ctx, this, {
          path: ['scheduler', isObject(scheduler.params) ? 'params' : 'type'],
          part: 'key',
          severity: 'error',
          message: `${type} needs params.${key}`,
        }),
      );
    }
    return problems;
  },
};
