// "auto" in a DeepSpeed config is a placeholder that only Hugging Face fills in: the Trainer
// (transformers/integrations/deepspeed.py: HfTrainerDeepSpeedConfig.trainer_config_process and
// trainer_config_finalize) and accelerate (utils/dataclasses.py: DeepSpeedPlugin, fill_match) replace
// it at a fixed list of keys. DeepSpeed itself drops "auto" inside its pydantic sections, so the
// default applies there (runtime/config_utils.py: DeepSpeedConfigModel.__init__), but reads it
// literally at the top level and in optimizer/scheduler params, where the string then breaks.
import type { ConfigPath } from '../../config/source-document';
import type { ConfigProblem } from '../../config/schema-problems';
import { report, type ConfigRule, type RuleContext } from '../rule';

/** The keys the Trainer or accelerate replace "auto" at. */
export const FILLED_BY_HUGGING_FACE = new Set([
  'train_micro_batch_size_per_gpu',
  'gradient_accumulation_steps',
  'train_batch_size',
  'gradient_clipping',
  'optimizer.params.lr',
  'optimizer.params.betas',
  'optimizer.params.eps',
  'optimizer.params.weight_decay',
  'scheduler.params.warmup_min_lr',
  'scheduler.params.warmup_max_lr',
  'scheduler.params.warmup_num_steps',
  'scheduler.params.total_num_steps',
  'fp16.enabled',
  'bf16.enabled',
  'amp.enabled',
  'amp.opt_level',
  'zero_optimization.reduce_bucket_size',
  'zero_optimization.stage3_prefetch_bucket_size',
  'zero_optimization.stage3_param_persistence_threshold',
  // accelerate's DeepSpeedPlugin fills these from its own config (plugin_to_config_mapping)
  'zero_optimization.stage',
  'zero_optimization.offload_optimizer.device',
  'zero_optimization.offload_param.device',
  'zero_optimization.offload_optimizer.nvme_path',
  'zero_optimization.offload_param.nvme_path',
  'zero_optimization.stage3_gather_16bit_weights_on_model_save',
]);

// Sections DeepSpeed reads through DeepSpeedConfigModel, which drops "auto" values (non-strict mode).
const DROPPING_SECTIONS = new Set([
  'zero_optimization',
  'fp16',
  'bf16',
  'bfloat16',
  'tensorboard',
  'wandb',
  'csv_monitor',
  'comet',
  'comms_logger',
  'compile',
  'hybrid_engine',
]);

export const autoValues: ConfigRule = {
  code: 'deepspeed.auto',
  why: '"auto" is filled in by the Hugging Face Trainer or accelerate at a fixed list of keys. deepspeed.initialize alone drops it inside sections like zero_optimization (the default applies) and reads it as a string at the top level, where it breaks. The setting fsdp.deepspeed.launchedWith says how your configs are launched.',
  source:
    'transformers/integrations/deepspeed.py: HfTrainerDeepSpeedConfig.trainer_config_process; accelerate/utils/dataclasses.py: DeepSpeedPlugin.__post_init__; deepspeed/runtime/config_utils.py: DeepSpeedConfigModel.__init__',
  check(ctx) {
    const problems: ConfigProblem[] = [];
    for (const path of autoPaths(ctx.value, [])) problems.push(...judge(ctx, path));
    return problems;
  },
};

function judge(ctx: RuleContext, path: ConfigPath): ConfigProblem[] {
  const dotted = path.join('.');
  const dropped = DROPPING_SECTIONS.has(String(path[0])) && path.length > 1;
  const consequence = dropped ? 'drops it and uses its default' : 'reads the string "auto" and fails';
  if (!FILLED_BY_HUGGING_FACE.has(dotted)) {
    return [
      report(ctx, autoValues, {
        path,
        severity: dropped ? 'warning' : 'error',
        message: `nothing fills in "auto" for ${dotted}: the Hugging Face Trainer and accelerate fill only their own list of keys, and DeepSpeed ${consequence}`,
      }),
    ];
  }
  switch (ctx.env.settings.deepspeedLaunchedWith) {
    case 'huggingface':
      return [];
    case 'deepspeed':
      return [
        report(ctx, autoValues, {
          path,
          severity: dropped ? 'warning' : 'error',
          message: `"auto" is filled in only by Hugging Face (Trainer, accelerate); launched with deepspeed alone, DeepSpeed ${consequence}`,
        }),
      ];
    default:
      return [
        report(ctx, autoValues, {
          path,
          severity: 'hint',
          message: `"auto": filled in by the Hugging Face Trainer or accelerate; with deepspeed.initialize alone DeepSpeed ${consequence} (set fsdp.deepspeed.launchedWith to say how you launch)`,
        }),
      ];
  }
}

/** The paths of every "auto" value, in document order. */
function autoPaths(value: unknown, path: (string | number)[], out: (string | number)[][] = []): (string | number)[][] {
  if (value === 'auto') out.push([...path]);
  else if (Array.isArray(value))
    value.forEach((v, i) => {
      path.push(i);
      autoPaths(v, path, out);
      path.pop();
    });
  else if (value !== null && typeof value === 'object')
    for (const k of Object.keys(value)) {
      path.push(k);
      autoPaths((value as Record<string, unknown>)[k], path, out);
      path.pop();
    }
  return out;
}

function hasAuto(value: unknown): boolean {
  if (value === 'auto') return true;
  if (Array.isArray(value)) return value.some(hasAuto);
  if (value === null || typeof value !== 'object') return false;
  for (const k in value)
    if (Object.prototype.hasOwnProperty.call(value, k) && hasAuto((value as Record<string, unknown>)[k])) return true;
  return false;
}

/**
 * The config with every "auto" value taken out, as the schema should see it: the config itself
 * where it holds none (most do; copying a generated 100k-key file cost a fifth of its check).
 */
export function withoutAutoValues(value: unknown): unknown {
  return hasAuto(value) ? copyWithoutAuto(value) : value;
}

function copyWithoutAuto(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyWithoutAuto);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  const object = value as Record<string, unknown>;
  for (const k of Object.keys(object)) if (object[k] !== 'auto') out[k] = copyWithoutAuto(object[k]);
  return out;
}
