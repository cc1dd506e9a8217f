// Hugging Face TrainingArguments / TRL arguments written as YAML (`trl sft --config args.yaml`, read
// with PyYAML, so YAML 1.1) or JSON (HfArgumentParser.parse_json_file): the schema generated from the
// installed transformers, trl and accelerate (scripts/schemas/hf_training_schema.py), deprecated
// keys, then the cross-field rules (precision, strategies, FSDP, the DeepSpeed file it names).
import { hfTrainingRules } from '../rules/hf-training';
import type { RuleContext } from '../rules/rule';
import hfTrainingArgsSchema from '../schemas/hf-training-args.schema.json';
import { compileSchema } from './compile-schema';
import { deprecatedKeyProblems, schemaProblems, type ConfigProblem } from './schema-problems';
import type { SchemaNode } from './schema-walk';

export const hfTrainingSchema = hfTrainingArgsSchema as SchemaNode;
const validate = compileSchema(hfTrainingArgsSchema);

/** The library versions the schema was generated from. */
export const HF_TRAINING_VERSIONS = (hfTrainingArgsSchema as { 'x-generated-from': Record<string, string> })[
  'x-generated-from'
];

/**
 * Arguments older transformers / TRL releases had, which files written for them still carry, and the
 * argument of the installed releases that does the same (its help text says so).
 */
const REPLACED: Record<string, { by: string; why: string; value?: (v: unknown) => unknown }> = {
  torch_dtype: { by: 'dtype', why: 'ModelConfig names it dtype' },
  evaluation_strategy: { by: 'eval_strategy', why: 'TrainingArguments names it eval_strategy' },
  max_seq_length: { by: 'max_length', why: "TRL's configs name it max_length" },
  warmup_ratio: { by: 'warmup_steps', why: 'warmup_steps takes a float in [0, 1) as a ratio of the total steps' },
};

export function checkHfTrainingConfig(ctx: RuleContext): ConfigProblem[] {
  const schema = schemaProblems(validate, ctx.doc, { tool: 'TrainingArguments' }).map((p): ConfigProblem => {
    if (p.code !== 'schema.unknown-key' || p.path.length !== 1) return p;
    const key = String(p.path[0]);
    const replaced = REPLACED[key];
    if (replaced) {
      const taken = key in ctx.value && replaced.by in ctx.value;
      return {
        ...p,
        message: `"${key}" is not an argument of the installed ${versions()} (${replaced.why}); use "${replaced.by}"`,
        suggestion: replaced.by,
        fixes: taken
          ? [
              {
                title: `Remove ${key} (${replaced.by} is given)`,
                preferred: true,
                edits: [{ kind: 'remove', path: [key] }],
              },
            ]
          : [
              {
                title: `Rename to ${replaced.by}`,
                preferred: true,
                edits: [{ kind: 'rename', path: [key], to: replaced.by }],
              },
            ],
      };
    }
    return {
      ...p,
      message: p.message.replace(
        '(TrainingArguments rejects it)',
        '(no TrainingArguments, TRL config or accelerate launch argument has it: HfArgumentParser and accelerate launch refuse it)',
      ),
    };
  });
  return [
    ...schema,
    ...deprecatedKeyProblems(hfTrainingSchema, ctx.doc, { tool: 'transformers' }),
    ...hfTrainingRules.flatMap((rule) => rule.check(ctx)),
  ];
}

function versions(): string {
  return Object.entries(HF_TRAINING_VERSIONS)
    .filter(([k]) => k !== 'accelerate')
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}
