// accelerate's DeepSpeed plugin: either a deepspeed_config_file holds the whole DeepSpeed
// configuration, or the deepspeed_config fields build one (accelerate/utils/dataclasses.py:
// DeepSpeedPlugin). The referenced file is read to check the two agree.
import path from 'node:path';
import type { ConfigProblem } from '../../config/schema-problems';
import { parseSourceDocument } from '../../config/source-document';
import { bf16Path, enabled, unusedOffloads, zeroStage } from '../deepspeed/zero-stage';
import { asNumber, isObject, report, type ConfigRule, type RuleContext } from '../rule';

const DS = 'deepspeed_config';
const FILE = 'deepspeed_config_file';

// The fields DeepSpeedPlugin._deepspeed_config_checks refuses next to a config file.
const FILE_OVERRIDES = [
  'gradient_accumulation_steps',
  'gradient_clipping',
  'zero_stage',
  'offload_optimizer_device',
  'offload_param_device',
  'offload_param_nvme_path',
  'offload_optimizer_nvme_path',
  'zero3_save_16bit_model',
];

function section(ctx: RuleContext): Record<string, unknown> | undefined {
  return isObject(ctx.value[DS]) ? (ctx.value[DS] as Record<string, unknown>) : undefined;
}

/** The DeepSpeed file named by deepspeed_config_file, parsed; undefined when absent or unreadable. */
export function referencedDeepSpeedConfig(
  ctx: RuleContext,
): { file: string; value: Record<string, unknown> } | undefined {
  const name = section(ctx)?.[FILE];
  if (typeof name !== 'string' || !ctx.env.readFile) return undefined;
  // accelerate opens the path from the launch folder; the config's own folder is the usual one.
  const file = path.resolve(path.dirname(ctx.fileName), name);
  const text = ctx.env.readFile(file);
  if (text === undefined) return undefined;
  const value = parseSourceDocument(text, 'json').value;
  return isObject(value) ? { file, value } : undefined;
}

export const fileOverrides: ConfigRule = {
  code: 'accelerate.deepspeed-file-overrides',
  why: 'With deepspeed_config_file the DeepSpeed file is the whole configuration: accelerate raises "When using `deepspeed_config_file`, the following accelerate config variables will be ignored" if the config also gives zero_stage, offload devices or paths, gradient_accumulation_steps, gradient_clipping, zero3_save_16bit_model or mixed_precision.',
  source:
    'accelerate/utils/dataclasses.py: DeepSpeedPlugin._deepspeed_config_checks; accelerate/commands/launch.py: launch_command (deepspeed_fields_from_accelerate_config)',
  check(ctx) {
    const ds = section(ctx);
    if (!ds || typeof ds[FILE] !== 'string') return [];
    const problems: ConfigProblem[] = FILE_OVERRIDES.filter((k) => k in ds).map((k) =>
      report(ctx, this, {
        path: [DS, k],
        part: 'key',
        severity: 'error',
        message: `${k} cannot be given together with ${FILE}: set it in the DeepSpeed file`,
        fixes: [{ title: `Remove ${k}`, preferred: true, edits: [{ kind: 'remove', path: [DS, k] }] }],
      }),
    );
    if ('mixed_precision' in ctx.value) {
      const conflict = precisionConflict(ctx, ctx.value.mixed_precision);
      problems.push(
        report(ctx, this, {
          path: ['mixed_precision'],
          part: 'key',
          severity: 'error',
          message: `mixed_precision cannot be given together with ${FILE}: the DeepSpeed file's fp16/bf16 sections decide${conflict ? `, and ${conflict}` : ''}`,
          fixes: [
            {
              title: 'Remove mixed_precision',
              preferred: true,
              edits: [{ kind: 'remove', path: ['mixed_precision'] }],
            },
          ],
        }),
      );
    }
    return problems;
  },
};

/** What contradicts `mixed_precision` in the referenced DeepSpeed file, if anything. */
function precisionConflict(ctx: RuleContext, mixed: unknown): string | undefined {
  const ref = referencedDeepSpeedConfig(ctx);
  if (!ref || (mixed !== 'fp16' && mixed !== 'bf16' && mixed !== 'fp8')) return undefined;
  const other = mixed === 'fp16' ? bf16Path(ref.value) : 'fp16';
  return enabled(ref.value[other]) ? `it says ${mixed} while ${path.basename(ref.file)} enables ${other}` : undefined;
}

export const zero3InitFlag: ConfigRule = {
  code: 'accelerate.zero3-init-flag',
  why: 'deepspeed.zero.Init partitions parameters as the model is built, which only ZeRO stage 3 does: accelerate warns "DeepSpeed Zero3 Init flag is only applicable for ZeRO Stage 3. Setting it to False."',
  source: 'accelerate/utils/dataclasses.py: DeepSpeedPlugin.__post_init__',
  check(ctx) {
    const ds = section(ctx);
    if (!ds || ds.zero3_init_flag !== true) return [];
    const ref = typeof ds[FILE] === 'string' ? referencedDeepSpeedConfig(ctx) : undefined;
    if (typeof ds[FILE] === 'string' && !ref) return []; // the stage is in a file we cannot read
    const stage = ref ? zeroStage(ref.value) : (asNumber(ds.zero_stage) ?? 2);
    if (stage === 3 || stage === 'auto' || stage === undefined) return [];
    return [
      report(ctx, this, {
        path: [DS, 'zero3_init_flag'],
        severity: 'warning',
        message: `zero3_init_flag applies only to ZeRO stage 3; this is stage ${stage}${ref ? ` (from ${path.basename(ref.file)})` : ''}, so accelerate turns it off`,
        fixes: [
          {
            title: 'Set zero3_init_flag: false',
            preferred: true,
            edits: [{ kind: 'set', path: [DS, 'zero3_init_flag'], value: false }],
          },
        ],
      }),
    ];
  },
};

export const referencedFileChecks: ConfigRule = {
  code: 'accelerate.deepspeed-file',
  why: 'accelerate refuses a DeepSpeed file without a zero_optimization section ("Please specify the ZeRO optimization config in the DeepSpeed config."), and DeepSpeed checks train_batch_size against the world size, which is num_processes here.',
  source:
    'accelerate/utils/dataclasses.py: DeepSpeedPlugin.__post_init__; deepspeed/runtime/config.py: DeepSpeedConfig._batch_assertion',
  check(ctx) {
    const ref = referencedDeepSpeedConfig(ctx);
    if (!ref) return [];
    const at = [DS, FILE];
    const name = path.basename(ref.file);
    const problems: ConfigProblem[] = [];
    if (!('zero_optimization' in ref.value))
      problems.push(
        report(ctx, this, {
          path: at,
          severity: 'error',
          message: `${name} has no zero_optimization section; accelerate requires one`,
        }),
      );
    const world = asNumber(ctx.value.num_processes);
    const [tbs, mbs, gas] = ['train_batch_size', 'train_micro_batch_size_per_gpu', 'gradient_accumulation_steps'].map(
      (k) => asNumber(ref.value[k]),
    );
    if (world && world > 0 && tbs !== undefined && mbs !== undefined && tbs !== mbs * (gas ?? 1) * world) {
      problems.push(
        report(ctx, this, {
          path: at,
          severity: 'error',
          message: `with num_processes ${world}, ${name}'s train_batch_size ${tbs} ≠ ${mbs} × ${gas ?? 1} × ${world} = ${mbs * (gas ?? 1) * world}`,
        }),
      );
    }
    return problems;
  },
};

export const offloadNeedsStage: ConfigRule = {
  code: 'accelerate.offload-ignored',
  why: "accelerate hands offload_param_device and offload_optimizer_device to DeepSpeed as zero_optimization.offload_param / offload_optimizer, where the same rules hold as in a ds_config (deepspeed.offload-ignored): parameter offload is done by the stage 3 optimizer only, optimizer offload needs ZeRO (stage 1-3), NVMe optimizer offload needs stage 3. accelerate's zero_stage defaults to 2.",
  source:
    'accelerate/commands/launch.py: deepspeed_fields_from_accelerate_config; accelerate/utils/dataclasses.py: DeepSpeedPlugin (offload_param_device "Only applicable with ZeRO Stage-3"); deepspeed/runtime/zero/config.py: DeepSpeedZeroConfig.offload_param',
  check(ctx) {
    const ds = section(ctx);
    // With a DeepSpeed file, the file decides (and the file's own rules check it).
    if (!ds || typeof ds[FILE] === 'string') return [];
    const stage = asNumber(ds.zero_stage) ?? 2;
    const problems: ConfigProblem[] = [];
    const unused = unusedOffloads(stage, ds.offload_param_device, ds.offload_optimizer_device);
    if (unused.param) {
      problems.push(
        report(ctx, this, {
          path: [DS, 'offload_param_device'],
          severity: 'warning',
          message: `offload_param_device does nothing at ZeRO stage ${stage}: parameters are offloaded only at stage 3`,
          fixes: [
            {
              title: 'Set offload_param_device: none',
              preferred: true,
              edits: [{ kind: 'set', path: [DS, 'offload_param_device'], value: 'none' }],
            },
          ],
        }),
      );
    }
    if (unused.optimizer === 'without-zero') {
      problems.push(
        report(ctx, this, {
          path: [DS, 'offload_optimizer_device'],
          severity: 'warning',
          message: 'offload_optimizer_device does nothing without ZeRO (stage 0)',
          fixes: [
            {
              title: 'Set offload_optimizer_device: none',
              preferred: true,
              edits: [{ kind: 'set', path: [DS, 'offload_optimizer_device'], value: 'none' }],
            },
          ],
        }),
      );
    } else if (unused.optimizer === 'nvme-below-stage-3') {
      problems.push(
        report(ctx, this, {
          path: [DS, 'offload_optimizer_device'],
          severity: 'warning',
          message: `NVMe optimizer offload is available only at ZeRO stage 3 (this is stage ${stage}); use cpu`,
          fixes: [
            {
              title: 'Offload to cpu',
              preferred: true,
              edits: [{ kind: 'set', path: [DS, 'offload_optimizer_device'], value: 'cpu' }],
            },
          ],
        }),
      );
    }
    return problems;
  },
};
