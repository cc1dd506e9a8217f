// Every rule by its code, for hover ("the rule behind a diagnostic"): why it exists and its source.
import { accelerateRules } from './accelerate';
import { deepspeedRules } from './deepspeed';
import { runConfigSchema } from '../config/run-config';
import { crossKeyChecks } from '../config/schema-cross-keys';
import type { SchemaNode } from '../config/schema-walk';
import type { ConfigRule } from './rule';
import { hfTrainingRules } from './hf-training';
import { runConfigRules, validRunConfigRules } from './run-config';
import { torchtitanRules } from './torchtitan';

type RuleInfo = Pick<ConfigRule, 'code' | 'why' | 'source'>;

// Problems that come from the schemas and the parsers rather than from a rule.
const SCHEMA_RULES: RuleInfo[] = [
  {
    code: 'syntax',
    why: 'The file cannot be read as YAML, JSON (with comments) or TOML, so nothing else can be checked until this is fixed.',
    source:
      'YAML 1.2 / JSON with comments / TOML 1.0, as read by the yaml, jsonc-parser and toml-eslint-parser packages',
  },
  {
    code: 'schema.unknown-key',
    why: "The key is not one the program reads here. Where it refuses unknown keys this is an error; where it silently ignores them (DeepSpeed's top level, accelerate's fsdp_config) a warning, because the setting you meant does not take effect.",
    source: 'core/schemas/*.schema.json (additionalProperties, x-unknown-keys)',
  },
  {
    code: 'schema.deprecated',
    why: 'The key still works but is deprecated; its replacement is named in the message.',
    source: 'core/schemas/*.schema.json (deprecated, x-replaced-by)',
  },
  {
    code: 'schema.type',
    why: 'The value has the wrong type for this key.',
    source: 'core/schemas/*.schema.json (type)',
  },
  {
    code: 'schema.enum',
    why: 'The value is not one of the values this key accepts.',
    source: 'core/schemas/*.schema.json (enum)',
  },
  {
    code: 'schema.range',
    why: 'The number is outside the range this key accepts.',
    source: 'core/schemas/*.schema.json (minimum, maximum)',
  },
  {
    code: 'schema.only-when',
    why: 'The key means something only for some values of another key (x-only-when: model.n_kv_heads is for architecture llama and qwen3); given elsewhere it would silently do nothing, so it is refused.',
    source:
      'core/schemas/run-config.schema.json (x-only-when), read by core/config/schema-cross-keys.ts and the runtime',
  },
  {
    code: 'schema.required',
    why: 'A key this section must have is missing.',
    source: 'core/schemas/*.schema.json (required)',
  },
  {
    code: 'model.from-hf',
    why: "model.from_hf gives the model's keys from a Hugging Face folder's config.json; a folder that is missing, or whose model the runtime cannot train (another family, experts, a sliding window, a rope scaling it does not apply), gives none, and the run would not start.",
    source: 'core/config/hf-model-folder.ts (config.json to the model keys), core/config/run-config-hf.ts',
  },
  {
    code: 'model.from-hf-differs',
    why: "A key written beside model.from_hf wins over the folder's, but the folder's weights were trained with the folder's value: the import checks only the tensors' shapes, so a changed rope_theta or rms_norm_eps is silently another model.",
    source: 'core/config/run-config-hf.ts',
  },
];

const ALL = new Map<string, RuleInfo>(
  [
    ...SCHEMA_RULES,
    // Rules between keys stated in the schema (x-checks), read by the editor, fsdp-train and the runtime.
    ...crossKeyChecks(runConfigSchema as SchemaNode).map((c) => ({
      code: c.code,
      why: `${c.key} ${c.divides ? `must divide ${c.divides}` : `must be less than ${c.lessThan}`}${c.unless ? ` unless ${c.unless} is given` : ''}: ${c.why}.`,
      source:
        'core/schemas/run-config.schema.json (x-checks), read by core/config/schema-cross-keys.ts and native/src/config/schema_reader.cc',
    })),
    ...runConfigRules,
    ...validRunConfigRules,
    ...deepspeedRules,
    ...accelerateRules,
    ...torchtitanRules,
    ...hfTrainingRules,
  ].map((r) => [r.code, r]),
);

export function ruleInfo(code: string): RuleInfo | undefined {
  return ALL.get(code);
}
