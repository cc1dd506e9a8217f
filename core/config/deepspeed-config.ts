// A DeepSpeed config (ds_config.json) checked as DeepSpeed reads it: "auto" placeholders taken out
// first (DeepSpeed drops them inside its sections; the auto rule says where that is a problem), then
// the schema, the deprecated keys (giving old and new together is refused), then the cross-field rules.
import { deepspeedRules } from '../rules/deepspeed';
import { withoutAutoValues } from '../rules/deepspeed/auto-values';
import type { RuleContext } from '../rules/rule';
import deepspeedConfigSchema from '../schemas/deepspeed-config.schema.json';
import { compileSchema } from './compile-schema';
import { deprecatedKeyProblems, schemaProblems, type ConfigProblem } from './schema-problems';
import type { SchemaNode } from './schema-walk';

export const deepspeedSchema = deepspeedConfigSchema as SchemaNode;
const validate = compileSchema(deepspeedConfigSchema);

export function checkDeepSpeedConfig(ctx: RuleContext): ConfigProblem[] {
  return [
    ...schemaProblems(validate, ctx.doc, { tool: 'DeepSpeed', value: withoutAutoValues(ctx.value) }),
    ...deprecatedKeyProblems(deepspeedSchema, ctx.doc, { tool: 'DeepSpeed', bothIsError: true }),
    ...deepspeedRules.flatMap((rule) => rule.check(ctx)),
  ];
}
