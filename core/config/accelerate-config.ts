// An accelerate config checked as `accelerate launch` reads it: YAML 1.1 (PyYAML), unknown top-level
// keys refused, unknown keys inside fsdp_config/deepspeed_config ignored, then the cross-field rules.
import { accelerateRules } from '../rules/accelerate';
import { stringKeysReadAsBooleans } from '../rules/accelerate/yaml-booleans';
import type { RuleContext } from '../rules/rule';
import accelerateConfigSchema from '../schemas/accelerate-config.schema.json';
import { compileSchema } from './compile-schema';
import { deprecatedKeyProblems, schemaProblems, type ConfigProblem } from './schema-problems';
import type { SchemaNode } from './schema-walk';

export const accelerateSchema = accelerateConfigSchema as SchemaNode;
const validate = compileSchema(accelerateConfigSchema);

export function checkAccelerateConfig(ctx: RuleContext): ConfigProblem[] {
  // `distributed_type: NO` read as false is reported once, by the rule that explains YAML 1.1.
  const asBooleans = new Set(stringKeysReadAsBooleans(ctx).map((f) => f.path.join('.')));
  const schema = schemaProblems(validate, ctx.doc, { tool: 'accelerate' }).filter(
    (p) => !(p.code === 'schema.type' && asBooleans.has(p.path.join('.'))),
  );
  return [
    ...schema,
    ...deprecatedKeyProblems(accelerateSchema, ctx.doc, { tool: 'accelerate' }),
    ...accelerateRules.flatMap((rule) => rule.check(ctx)),
  ];
}
