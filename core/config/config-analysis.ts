// The one entry point of config analysis, used by the language server, the CLI and the tests:
// parse with positions, then the kind's schema and cross-field rules. Never throws on bad input;
// everything wrong with the text comes back as a problem with a range.
import { checkAccelerateConfig, accelerateSchema } from './accelerate-config';
import { checkDeepSpeedConfig, deepspeedSchema } from './deepspeed-config';
import type { ConfigKind } from './document-kind';
import { checkLaunchSpec, launchSpecSchemaNode } from './launch-spec';
import { checkRunConfigText, runConfigSchema } from './run-config';
import type { ConfigProblem } from './schema-problems';
import type { SchemaNode } from './schema-walk';
import { parseSourceDocument, sourceKindOf, type SourceDocument } from './source-document';
import { checkHfTrainingConfig, hfTrainingSchema } from './hf-training-config';
import { checkTorchtitanConfig, torchtitanSchema } from './torchtitan-config';
import { runConfigRules, validRunConfigRules } from '../rules/run-config';
import { DEFAULT_SETTINGS, isObject, type AnalysisEnvironment, type RuleContext } from '../rules/rule';

export interface ConfigAnalysis {
  kind: ConfigKind;
  fileName: string;
  doc: SourceDocument;
  schema: SchemaNode;
  /** Sorted by position. */
  problems: ConfigProblem[];
}

export const SCHEMAS: Record<ConfigKind, SchemaNode> = {
  'run-config': runConfigSchema as SchemaNode,
  deepspeed: deepspeedSchema,
  accelerate: accelerateSchema,
  'launch-spec': launchSpecSchemaNode,
  torchtitan: torchtitanSchema,
  'hf-training': hfTrainingSchema,
};

const WHAT: Record<ConfigKind, string> = {
  'run-config': 'a run config must be a mapping with model, data and training sections',
  deepspeed: 'a DeepSpeed config must be a JSON object',
  accelerate: 'an accelerate config must be a mapping of settings',
  'launch-spec': 'a launch spec must be a mapping with a command',
  torchtitan: 'a torchtitan job config must be TOML tables ([job], [model], [training], …)',
  'hf-training': 'TrainingArguments must be a mapping of argument names to values',
};

const CHECKS: Record<Exclude<ConfigKind, 'run-config'>, (ctx: RuleContext) => ConfigProblem[]> = {
  deepspeed: checkDeepSpeedConfig,
  accelerate: checkAccelerateConfig,
  'launch-spec': checkLaunchSpec,
  torchtitan: checkTorchtitanConfig,
  'hf-training': checkHfTrainingConfig,
};

/** YAML version of the program that reads each kind: accelerate uses PyYAML (YAML 1.1). */
export function yamlVersionOf(kind: ConfigKind): '1.1' | '1.2' {
  return kind === 'accelerate' || kind === 'hf-training' ? '1.1' : '1.2';
}

export function analyseConfig(
  kind: ConfigKind,
  text: string,
  fileName: string,
  env: AnalysisEnvironment = { settings: DEFAULT_SETTINGS },
): ConfigAnalysis {
  const schema = SCHEMAS[kind];
  if (kind === 'run-config') {
    // The rules read the model keys model.from_hf's folder gives as if the file wrote them.
    const { doc, problems, value } = checkRunConfigText(text, fileName);
    if (isObject(value) && !problems.some((p) => p.code === 'syntax')) {
      const ctx: RuleContext = { doc, value, fileName, env };
      problems.push(...runConfigRules.flatMap((r) => r.check(ctx)));
      if (!problems.some((p) => p.severity === 'error'))
        problems.push(...validRunConfigRules.flatMap((r) => r.check(ctx)));
    }
    return { kind, fileName, doc, schema, problems: sortProblems(problems) };
  }
  const doc = parseSourceDocument(text, sourceKindOf(fileName), { yamlVersion: yamlVersionOf(kind) });
  const problems: ConfigProblem[] = doc.syntaxErrors.map((e) => ({
    severity: e.severity ?? 'error',
    path: [],
    code: 'syntax',
    message: e.message,
    range: e.range,
  }));
  if (!problems.some((p) => p.severity === 'error')) {
    if (!isObject(doc.value)) {
      problems.push({ severity: 'error', path: [], code: 'schema.type', message: WHAT[kind], range: doc.rangeOf([]) });
    } else {
      const ctx: RuleContext = { doc, value: doc.value, fileName, env };
      problems.push(...CHECKS[kind](ctx));
    }
  }
  return { kind, fileName, doc, schema, problems: sortProblems(problems) };
}

function sortProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return problems.sort(
    (a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character,
  );
}
