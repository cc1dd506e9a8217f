// TrainingArguments' own checks (transformers/training_args.py: TrainingArguments.__post_init__), and
// keys of different TRL trainers mixed in one file.
import type { ConfigProblem } from '../../config/schema-problems';
import { propertyOf, type SchemaNode } from '../../config/schema-walk';
import hfTrainingArgsSchema from '../../schemas/hf-training-args.schema.json';
import { report, type ConfigRule } from '../rule';

const schema = hfTrainingArgsSchema as SchemaNode;
const on = (v: unknown) => v === true || (typeof v === 'string' && /^(true|yes|1)$/i.test(v));

export const halfPrecision: ConfigRule = {
  code: 'hf.precision',
  why: 'TrainingArguments refuses fp16 and bf16 together: "At most one of fp16 and bf16 can be True, but not both".',
  source: 'transformers/training_args.py: TrainingArguments.__post_init__',
  check(ctx) {
    if (!on(ctx.value.fp16) || !on(ctx.value.bf16)) return [];
    return [
      report(ctx, this, {
        path: ['fp16'],
        part: 'key',
        severity: 'error',
        message: 'fp16 and bf16 cannot both be true; bf16 is the one to keep on GPUs that have it (A100, H100)',
        fixes: [
          { title: 'Remove fp16 (keep bf16)', preferred: true, edits: [{ kind: 'remove', path: ['fp16'] }] },
          { title: 'Remove bf16 (keep fp16)', edits: [{ kind: 'remove', path: ['bf16'] }] },
        ],
      }),
    ];
  },
};

export const bestModelStrategies: ConfigRule = {
  code: 'hf.best-model-strategies',
  why: 'load_best_model_at_end needs a checkpoint at every evaluation: TrainingArguments raises "--load_best_model_at_end requires the save and eval strategy to match, except when --save_strategy=\\"best\\"".',
  source: 'transformers/training_args.py: TrainingArguments.__post_init__',
  check(ctx) {
    const v = ctx.value;
    if (!on(v.load_best_model_at_end)) return [];
    const evalStrategy = String(v.eval_strategy ?? 'no');
    const saveStrategy = String(v.save_strategy ?? 'steps');
    if (saveStrategy === 'best' || evalStrategy === saveStrategy) return [];
    return [
      report(ctx, this, {
        path: 'save_strategy' in v ? ['save_strategy'] : ['load_best_model_at_end'],
        severity: 'error',
        message: `load_best_model_at_end needs save_strategy to match eval_strategy ("${evalStrategy}"), got "${saveStrategy}"`,
        fixes: [
          {
            title: `Set save_strategy: ${evalStrategy}`,
            preferred: true,
            edits: [{ kind: 'set', path: ['save_strategy'], value: evalStrategy }],
          },
        ],
      }),
    ];
  },
};

const GENERAL = new Set([
  'TrainingArguments',
  'ScriptArguments',
  'ModelConfig',
  'DatasetMixtureConfig',
  'accelerate launch',
  'trl CLI',
]);

export const trainerMix: ConfigRule = {
  code: 'hf.trainer-mix',
  why: "Each TRL command reads its own config class (SFTConfig for trl sft, DPOConfig for trl dpo, …); keys of another trainer's config are not its arguments, and the trl CLI hands them to accelerate launch, which refuses them.",
  source: 'trl/scripts/sft.py, dpo.py, grpo.py (make_parser); trl/cli/commands/training.py: TrainingCommand.run',
  check(ctx) {
    const owners = new Map<string, string[]>();
    for (const key of Object.keys(ctx.value)) {
      const by = (propertyOf(schema, key) as { 'x-defined-by'?: string[] } | undefined)?.['x-defined-by'];
      if (by && !by.some((c) => GENERAL.has(c))) owners.set(key, by);
    }
    if (owners.size < 2) return [];
    // The trainer that reads most of the trainer-specific keys; the keys it lacks are the problem.
    const counts = new Map<string, number>();
    for (const by of owners.values()) for (const c of by) counts.set(c, (counts.get(c) ?? 0) + 1);
    const [best, n] = [...counts].sort((a, b) => b[1] - a[1])[0];
    if (n === owners.size) return [];
    const problems: ConfigProblem[] = [];
    for (const [key, by] of owners) {
      if (by.includes(best)) continue;
      problems.push(
        report(ctx, this, {
          path: [key],
          part: 'key',
          severity: 'warning',
          message: `"${key}" is an argument of ${by.join(', ')}, but the other trainer-specific keys here are ${best}'s; the trainer that reads this file does not know it`,
          fixes: [{ title: `Remove ${key}`, edits: [{ kind: 'remove', path: [key] }] }],
        }),
      );
    }
    return problems;
  },
};
