// A torchtitan job config (TOML) checked as torchtitan 0.2.2 reads it: ConfigManager loads the file
// with tomllib and builds JobConfig with _dict_to_dataclass, which refuses unknown keys in every
// section; then the cross-field rules (parallel degrees, batch sizes, pipeline schedule, float8).
// The schema is generated from torchtitan's own dataclasses (scripts/schemas/torchtitan_schema.py).
import { torchtitanRules } from '../rules/torchtitan';
import type { RuleContext } from '../rules/rule';
import torchtitanConfigSchema from '../schemas/torchtitan-config.schema.json';
import { compileSchema } from './compile-schema';
import { deprecatedKeyProblems, schemaProblems, type ConfigProblem } from './schema-problems';
import type { SchemaNode } from './schema-walk';

export const torchtitanSchema = torchtitanConfigSchema as SchemaNode;
const validate = compileSchema(torchtitanConfigSchema);

/** The torchtitan release the schema and rules follow. */
export const TORCHTITAN_RELEASE = (torchtitanConfigSchema as { 'x-generated-from': { version: string } })[
  'x-generated-from'
].version;

export function checkTorchtitanConfig(ctx: RuleContext): ConfigProblem[] {
  const custom = customConfigModule(ctx.value);
  const schema = schemaProblems(validate, ctx.doc, { tool: `torchtitan ${TORCHTITAN_RELEASE}` }).map((p) =>
    // A custom config module extends JobConfig (ConfigManager._merge_configs): keys it adds are not ours to judge.
    custom && p.code === 'schema.unknown-key'
      ? {
          ...p,
          severity: 'information' as const,
          message: `"${String(p.path[p.path.length - 1])}" is not in torchtitan's JobConfig; it must be defined by the custom config module ${custom}${p.suggestion ? ` (or did you mean "${p.suggestion}"?)` : ''}`,
        }
      : p,
  );
  return [
    ...schema,
    ...deprecatedKeyProblems(torchtitanSchema, ctx.doc, { tool: 'torchtitan' }),
    ...torchtitanRules.flatMap((rule) => rule.check(ctx)),
  ];
}

/** job.custom_config_module (or the older experimental.custom_args_module), when set. */
function customConfigModule(value: Record<string, unknown>): string | undefined {
  for (const [section, key] of [
    ['job', 'custom_config_module'],
    ['experimental', 'custom_args_module'],
  ]) {
    const s = value[section];
    const v = s && typeof s === 'object' ? (s as Record<string, unknown>)[key] : undefined;
    if (typeof v === 'string' && v) return v;
  }
  return undefined;
}
