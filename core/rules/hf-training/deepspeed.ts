// `deepspeed: ds_config.json` in TrainingArguments: the Trainer fills the file's "auto" values from
// the arguments and refuses values that contradict them ("Please correct the following DeepSpeed
// config values that mismatch TrainingArguments values"). The file is followed: read, checked as a
// DeepSpeed config launched through Hugging Face, and compared value by value.
import path from 'node:path';
import { checkDeepSpeedConfig } from '../../config/deepspeed-config';
import type { ConfigProblem } from '../../config/schema-problems';
import { parseSourceDocument } from '../../config/source-document';
import { propertyOf, type SchemaNode } from '../../config/schema-walk';
import hfTrainingArgsSchema from '../../schemas/hf-training-args.schema.json';
import { isObject, report, valueAt, type ConfigRule, type RuleContext } from '../rule';

const schema = hfTrainingArgsSchema as SchemaNode;

/** TrainingArguments' value of `key`: as written, else its default (undefined where trainers differ). */
function argument(ctx: RuleContext, key: string): unknown {
  if (key in ctx.value) return numeric(ctx.value[key]);
  const node = propertyOf(schema, key) as (SchemaNode & { 'x-defaults'?: object }) | undefined;
  return node && !node['x-defaults'] ? node.default : undefined;
}

/** argparse converts numbers written as strings ("2e-5"): compare them as numbers. */
function numeric(v: unknown): unknown {
  return typeof v === 'string' && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v) ? Number(v) : v;
}

// What HfTrainerDeepSpeedConfig.trainer_config_process compares: DeepSpeed key, the arguments' value.
const MATCHED: Array<{ ds: string; hf: string; value(ctx: RuleContext): unknown; fix?: string }> = [
  {
    ds: 'train_micro_batch_size_per_gpu',
    hf: 'per_device_train_batch_size',
    value: (c) => argument(c, 'per_device_train_batch_size'),
    fix: 'per_device_train_batch_size',
  },
  {
    ds: 'gradient_accumulation_steps',
    hf: 'gradient_accumulation_steps',
    value: (c) => argument(c, 'gradient_accumulation_steps'),
    fix: 'gradient_accumulation_steps',
  },
  { ds: 'gradient_clipping', hf: 'max_grad_norm', value: (c) => argument(c, 'max_grad_norm'), fix: 'max_grad_norm' },
  { ds: 'optimizer.params.lr', hf: 'learning_rate', value: (c) => argument(c, 'learning_rate'), fix: 'learning_rate' },
  { ds: 'optimizer.params.eps', hf: 'adam_epsilon', value: (c) => argument(c, 'adam_epsilon'), fix: 'adam_epsilon' },
  {
    ds: 'optimizer.params.weight_decay',
    hf: 'weight_decay',
    value: (c) => argument(c, 'weight_decay'),
    fix: 'weight_decay',
  },
  {
    ds: 'scheduler.params.warmup_max_lr',
    hf: 'learning_rate',
    value: (c) => argument(c, 'learning_rate'),
    fix: 'learning_rate',
  },
  {
    ds: 'fp16.enabled',
    hf: 'fp16',
    value: (c) => argument(c, 'fp16') === true || argument(c, 'fp16_full_eval') === true,
    fix: 'fp16',
  },
  {
    ds: 'bf16.enabled',
    hf: 'bf16',
    value: (c) => argument(c, 'bf16') === true || argument(c, 'bf16_full_eval') === true,
    fix: 'bf16',
  },
];

export const deepspeedReference: ConfigRule = {
  code: 'hf.deepspeed',
  why: 'TrainingArguments(deepspeed=FILE) loads the DeepSpeed config and fills its "auto" values from the arguments; a value given in both that differs stops the Trainer ("Please correct the following DeepSpeed config values that mismatch TrainingArguments values"). The file itself is checked as DeepSpeed reads it.',
  source:
    'transformers/integrations/deepspeed.py: HfTrainerDeepSpeedConfig.trainer_config_process, fill_match, trainer_config_finalize',
  check(ctx) {
    const name = ctx.value.deepspeed;
    if (typeof name !== 'string' || !name || !ctx.env.readFile) return [];
    // The Trainer opens the path from the launch folder; the config's own folder is the usual one.
    const file = path.resolve(path.dirname(ctx.fileName), name);
    const text = ctx.env.readFile(file);
    if (text === undefined)
      return [
        report(ctx, this, {
          path: ['deepspeed'],
          severity: 'warning',
          message: `${name} is not found next to this file (${file}); the Trainer opens it from the folder it is launched in`,
        }),
      ];
    const doc = parseSourceDocument(text, 'json');
    const ds = doc.value;
    const own =
      doc.syntaxErrors.length || !isObject(ds)
        ? doc.syntaxErrors.map((e) => ({ severity: 'error' as const, path: [], message: e.message, range: e.range }))
        : checkDeepSpeedConfig({
            doc,
            value: ds,
            fileName: file,
            env: { ...ctx.env, settings: { ...ctx.env.settings, deepspeedLaunchedWith: 'huggingface' } },
          });
    const problems: ConfigProblem[] = [];
    const errors = own.filter((p) => p.severity === 'error').sort((a, b) => a.range.start.line - b.range.start.line);
    if (errors.length) {
      const first = errors[0];
      problems.push(
        report(ctx, this, {
          path: ['deepspeed'],
          severity: 'error',
          message: `${path.basename(file)} has ${errors.length} error${errors.length > 1 ? 's' : ''}; line ${first.range.start.line + 1}: ${first.path.length ? `${first.path.join('.')}: ` : ''}${first.message}`,
        }),
      );
      return problems;
    }
    if (!isObject(ds)) return problems;
    for (const m of MATCHED) {
      const dsValue = valueAt(ds, m.ds.split('.'));
      const hf = m.value(ctx);
      if (
        dsValue === undefined ||
        dsValue === null ||
        dsValue === 'auto' ||
        hf === undefined ||
        numeric(dsValue) === hf
      )
        continue;
      const fixes =
        m.fix && typeof dsValue !== 'object'
          ? [
              {
                title: `Set ${m.fix}: ${JSON.stringify(dsValue)} (as ${path.basename(file)} says)`,
                preferred: true,
                edits: [{ kind: 'set' as const, path: [m.fix], value: dsValue }],
              },
            ]
          : undefined;
      problems.push(
        report(ctx, this, {
          path: m.hf in ctx.value ? [m.hf] : ['deepspeed'],
          severity: 'error',
          message: `${path.basename(file)} sets ${m.ds} = ${JSON.stringify(dsValue)} but ${m.hf} is ${JSON.stringify(hf)}${m.hf in ctx.value ? '' : ' (its default)'}: the Trainer refuses the mismatch; write "auto" there or the same value here`,
          fixes,
        }),
      );
    }
    return problems;
  },
};
