// ZeRO rules: which options each stage uses, and what offloading needs.
import { isObject, report, type ConfigRule } from '../rule';
import type { ConfigProblem } from '../../config/schema-problems';
import { unusedOffloads, zeroStage } from './zero-stage';

const ZERO = 'zero_optimization';

function zeroSection(value: Record<string, unknown>): Record<string, unknown> | undefined {
  return isObject(value[ZERO]) ? (value[ZERO] as Record<string, unknown>) : undefined;
}

function offloadDevice(block: unknown): string | undefined {
  return isObject(block) && typeof block.device === 'string' ? block.device : undefined;
}

export const offloadNeedsStage: ConfigRule = {
  code: 'deepspeed.offload-ignored',
  why: 'Parameter offload is implemented by the stage 3 optimizer only ("Valid only with stage 3"); below stage 3 an offload_param block does nothing. Optimizer offload needs ZeRO (stage 1-3), and NVMe optimizer offload needs stage 3.',
  source:
    'https://www.deepspeed.ai/docs/config-json/#parameter-offloading; deepspeed/runtime/zero/config.py: DeepSpeedZeroConfig.offload_param, offload_optimizer',
  check(ctx) {
    const zero = zeroSection(ctx.value);
    const stage = zeroStage(ctx.value);
    if (!zero || typeof stage !== 'number') return [];
    const problems: ConfigProblem[] = [];
    const unused = unusedOffloads(stage, offloadDevice(zero.offload_param), offloadDevice(zero.offload_optimizer));
    if (unused.param) {
      problems.push(
        report(ctx, this, {
          path: [ZERO, 'offload_param'],
          part: 'key',
          severity: 'warning',
          message: `offload_param does nothing at ZeRO stage ${stage}: parameters are offloaded only at stage 3`,
          fixes: [
            {
              title: 'Remove the offload_param block',
              preferred: true,
              edits: [{ kind: 'remove', path: [ZERO, 'offload_param'] }],
            },
          ],
        }),
      );
    }
    if (unused.optimizer === 'without-zero') {
      problems.push(
        report(ctx, this, {
          path: [ZERO, 'offload_optimizer'],
          part: 'key',
          severity: 'warning',
          message: 'offload_optimizer does nothing without ZeRO (stage 0)',
          fixes: [
            {
              title: 'Remove the offload_optimizer block',
              preferred: true,
              edits: [{ kind: 'remove', path: [ZERO, 'offload_optimizer'] }],
            },
          ],
        }),
      );
    } else if (unused.optimizer === 'nvme-below-stage-3') {
      problems.push(
        report(ctx, this, {
          path: [ZERO, 'offload_optimizer', 'device'],
          severity: 'warning',
          message: `NVMe optimizer offload is available only at ZeRO stage 3 (this is stage ${stage}); use device "cpu"`,
          fixes: [
            {
              title: 'Offload to cpu',
              preferred: true,
              edits: [{ kind: 'set', path: [ZERO, 'offload_optimizer', 'device'], value: 'cpu' }],
            },
          ],
        }),
      );
    }
    return problems;
  },
};

export const partialOffloadNeedsStage3: ConfigRule = {
  code: 'deepspeed.partial-offload-stage',
  why: 'offload_optimizer.ratio below 1 offloads only part of the optimizer state, which only the stage 3 optimizer supports: DeepSpeed asserts "Partial offloading only supported for ZeRO Stage 3."',
  source: 'deepspeed/runtime/zero/config.py: DeepSpeedZeroConfig.offload_ratio_check',
  check(ctx) {
    const zero = zeroSection(ctx.value);
    const stage = zeroStage(ctx.value);
    const opt = zero?.offload_optimizer;
    if (!isObject(opt) || typeof opt.ratio !== 'number' || opt.ratio >= 1 || stage === 3 || stage === 'auto') return [];
    return [
      report(ctx, this, {
        path: [ZERO, 'offload_optimizer', 'ratio'],
        severity: 'error',
        message: `offload_optimizer.ratio ${opt.ratio} < 1 needs ZeRO stage 3 (this is stage ${stage ?? '?'})`,
        fixes: [
          {
            title: 'Remove ratio (offload all optimizer state)',
            edits: [{ kind: 'remove', path: [ZERO, 'offload_optimizer', 'ratio'] }],
          },
        ],
      }),
    ];
  },
};

export const nvmeNeedsPath: ConfigRule = {
  code: 'deepspeed.nvme-path',
  why: 'Offloading to NVMe swaps tensors into files under nvme_path; without it DeepSpeed asserts ("nvme_path" cannot be None if remote device is nvme) or fails joining the swap folder.',
  source:
    'deepspeed/runtime/zero/partition_parameters.py: Init.__init__; deepspeed/runtime/zero/stage3.py: DeepSpeedZeroOptimizer_Stage3 (nvme_swap_folder)',
  check(ctx) {
    const zero = zeroSection(ctx.value);
    if (!zero) return [];
    const problems: ConfigProblem[] = [];
    for (const block of ['offload_param', 'offload_optimizer']) {
      const b = zero[block];
      if (offloadDevice(b) !== 'nvme' || (isObject(b) && typeof b.nvme_path === 'string' && b.nvme_path !== ''))
        continue;
      if (isObject(b) && b.nvme_path === 'auto') continue; // accelerate fills it from offload_*_nvme_path
      problems.push(
        report(ctx, this, {
          path: [ZERO, block, 'device'],
          severity: 'error',
          message: `${block} to nvme needs nvme_path, the folder on the NVMe drive to swap to`,
        }),
      );
    }
    return problems;
  },
};

// Keys read only by the stage 3 optimizer (zero/config.py: the stage3_* aliases and their field names).
const STAGE3_KEYS = [
  'stage3_prefetch_bucket_size',
  'prefetch_bucket_size',
  'stage3_param_persistence_threshold',
  'param_persistence_threshold',
  'stage3_model_persistence_threshold',
  'model_persistence_threshold',
  'stage3_max_live_parameters',
  'max_live_parameters',
  'stage3_max_reuse_distance',
  'max_reuse_distance',
  'stage3_gather_16bit_weights_on_model_save',
  'gather_16bit_weights_on_model_save',
  'stage3_gather_fp16_weights_on_model_save',
  'stage3_module_granularity_threshold',
  'module_granularity_threshold',
  'stage3_use_all_reduce_for_fetch_params',
  'use_all_reduce_for_fetch_params',
  'stage3_allgather_sequential',
  'allgather_sequential',
];

export const stage3KeysBelowStage3: ConfigRule = {
  code: 'deepspeed.stage3-keys-ignored',
  why: 'The stage3_* options tune parameter partitioning, which happens only at ZeRO stage 3; at a lower stage DeepSpeed accepts and ignores them.',
  source: 'deepspeed/runtime/zero/config.py: DeepSpeedZeroConfig (stage3_* fields, "Used by ZeRO3 ...")',
  check(ctx) {
    const zero = zeroSection(ctx.value);
    const stage = zeroStage(ctx.value);
    if (!zero || typeof stage !== 'number' || stage === 3) return [];
    return STAGE3_KEYS.filter((k) => k in zero).map((k) =>
      report(ctx, this, {
        path: [ZERO, k],
        part: 'key',
        severity: 'warning',
        message: `${k} is used only at ZeRO stage 3; at stage ${stage} it is ignored`,
        fixes: [{ title: `Remove ${k}`, preferred: true, edits: [{ kind: 'remove', path: [ZERO, k] }] }],
      }),
    );
  },
};

export const allreduceSumWithStage3: ConfigRule = {
  code: 'deepspeed.allreduce-sum-stage3',
  why: 'ZeRO stage 3 reduce-scatters averaged gradients; DeepSpeed raises "gradient_allreduce_op=\'sum\' is not supported with ZeRO stage 3".',
  source: 'deepspeed/runtime/config.py: DeepSpeedConfig._do_error_check',
  check(ctx) {
    const op = ctx.value.gradient_allreduce_op;
    if (typeof op !== 'string' || op.toLowerCase() !== 'sum' || zeroStage(ctx.value) !== 3) return [];
    return [
      report(ctx, this, {
        path: ['gradient_allreduce_op'],
        severity: 'error',
        message: 'gradient_allreduce_op "sum" is not supported with ZeRO stage 3',
        fixes: [
          {
            title: 'Use "mean"',
            preferred: true,
            edits: [{ kind: 'set', path: ['gradient_allreduce_op'], value: 'mean' }],
          },
        ],
      }),
    ];
  },
};

export const booleanZeroSection: ConfigRule = {
  code: 'deepspeed.zero-boolean',
  why: 'The old form "zero_optimization": true still means stage 1 but DeepSpeed logs it as deprecated and asks for {"stage": N}.',
  source: 'deepspeed/runtime/zero/config.py: read_zero_config_deprecated',
  check(ctx) {
    const zero = ctx.value[ZERO];
    if (typeof zero !== 'boolean') return [];
    const stage = zero ? 1 : 0;
    return [
      report(ctx, this, {
        path: [ZERO],
        severity: 'warning',
        message: `"${ZERO}": ${zero} is deprecated; write {"stage": ${stage}}`,
        fixes: [
          {
            title: `Replace with {"stage": ${stage}}`,
            preferred: true,
            edits: [{ kind: 'set', path: [ZERO], value: { stage } }],
          },
        ],
      }),
    ];
  },
};
