// The run config: validated against core/schemas/run-config.schema.json, then resolved (defaults
// filled in, aliases folded, paths made absolute) into the exact object the runtime receives.
import path from 'node:path';
import { parse as parseYamlScalar } from 'yaml';
import runConfigSchema from '../schemas/run-config.schema.json';
import type { RunConfig } from '../generated/run-config';
import { compileSchema } from './compile-schema';
import { expandHfModel, isMissingModelKey } from './run-config-hf';
import { conditionHolds, crossKeyProblems } from './schema-cross-keys';
import type { SchemaNode } from './schema-walk';
import { schemaProblems, type ConfigProblem } from './schema-problems';
import { parseSourceDocument, sourceKindOf, type SourceDocument } from './source-document';

export * from '../generated/run-config';
export { runConfigSchema };

export const validateRunConfigSchema = compileSchema<RunConfig>(runConfigSchema);
const SCHEMA = runConfigSchema as SchemaNode;

/** DeepSpeed's stage numbers, accepted as `fsdp.zero_stage`. */
export const ZERO_STAGE_STRATEGY = ['NO_SHARD', 'SHARD_OPTIMIZER', 'SHARD_GRAD_OP', 'FULL_SHARD'] as const;

/** A run config with every default filled in: what `fsdp-train` and the runtime operate on. */
export type ResolvedRunConfig = RunConfig & {
  [
    K in
      | 'fsdp'
      | 'mixed_precision'
      | 'activation_checkpointing'
      | 'checkpointing'
      | 'stability'
      | 'logging'
      | 'launch'
      | 'debug'
  ]-?: NonNullable<RunConfig[K]>;
};

export interface LoadedRunConfig {
  doc: SourceDocument;
  problems: ConfigProblem[];
  /** Present when there are no errors. */
  config?: ResolvedRunConfig;
}

export interface RunConfigCheck {
  doc: SourceDocument;
  problems: ConfigProblem[];
  /** What was checked: the parsed value, with the model keys of model.from_hf's folder filled in. */
  value: unknown;
}

export interface RunConfigSources {
  /** `fsdp-train --from-hf DIR` (absolute): model.from_hf, whatever the file says. */
  fromHf?: string;
}

/** Parses and checks a run config's text. Syntax and schema errors come back as problems, never thrown. */
export function checkRunConfigText(text: string, fileName: string, sources: RunConfigSources = {}): RunConfigCheck {
  return checkRunConfigDocument(parseSourceDocument(text, sourceKindOf(fileName)), fileName, sources);
}

/**
 * The same checks of a run config already parsed (each parse of a 100k-key file is most of its
 * check). `fileName` places a relative model.from_hf; without it the folder is not read.
 */
export function checkRunConfigDocument(
  doc: SourceDocument,
  fileName?: string,
  sources: RunConfigSources = {},
): RunConfigCheck {
  let value = doc.value;
  const problems: ConfigProblem[] = doc.syntaxErrors.map((e) => ({
    severity: 'error' as const,
    path: [],
    code: 'syntax',
    message: e.message,
    range: e.range,
  }));
  if (problems.length === 0) {
    if (doc.value === undefined || doc.value === null || typeof doc.value !== 'object' || Array.isArray(doc.value)) {
      problems.push({
        severity: 'error',
        path: [],
        code: 'schema.type',
        message: 'a run config must be a mapping with model, data and training sections',
        range: doc.rangeOf([]),
      });
    } else {
      const hf = fileName !== undefined ? expandHfModel(doc.value, fileName, doc, sources.fromHf) : { value };
      value = hf.value;
      const nonFinite = nonFiniteProblems(doc);
      const at = new Set(nonFinite.map((p) => p.path.join('.')));
      // A range check of the same number ("must be > 0, got null") adds nothing to "must be finite";
      // the keys a folder that could not be read would have given are said missing by its problem.
      const shown = (p: ConfigProblem) => !at.has(p.path.join('.')) && !(hf.problem && isMissingModelKey(p));
      problems.push(...nonFinite);
      problems.push(...schemaProblems(validateRunConfigSchema, doc, { value }).filter(shown));
      problems.push(...crossKeyProblems(SCHEMA, doc, value).filter(shown));
      if (hf.problem) problems.push(hf.problem);
      if ('warnings' in hf) problems.push(...(hf.warnings ?? []));
      problems.push(...aliasProblems(doc));
    }
  }
  return { doc, problems, value };
}

/**
 * Loads a run config for running: applies `--set key=value` overrides, validates, resolves.
 * `baseDir` is the folder relative data and run paths are resolved against (the config's folder).
 */
export function loadRunConfig(
  text: string,
  fileName: string,
  overrides: string[] = [],
  sources: RunConfigSources = {},
): LoadedRunConfig {
  const checked = checkRunConfigText(text, fileName, sources);
  if (checked.problems.some((p) => p.severity === 'error') || overrides.length === 0) {
    return finish(checked.doc, checked.problems, fileName, checked.value);
  }
  // Overrides apply to the parsed value; problems they cause point at the override, not the file.
  const written = structuredClone(checked.doc.value) as Record<string, unknown>;
  const problems: ConfigProblem[] = [...checked.problems];
  for (const o of overrides) {
    const err = applyOverride(written, o) ?? nonFiniteInOverride(written, o);
    if (err)
      problems.push({ severity: 'error', path: [], code: 'override', message: err, range: checked.doc.rangeOf([]) });
  }
  // The folder is read again after them: --set model.from_hf=… names another one.
  const hf = expandHfModel(written, fileName, checked.doc, sources.fromHf);
  if (hf.problem)
    problems.push({
      ...hf.problem,
      path: [],
      message: `after --set: model.${hf.problem.message}`,
      range: checked.doc.rangeOf([]),
    });
  const value = hf.value;
  // Without the folder's keys, the schema would only list the ones it gives.
  if (hf.problem) return finish(checked.doc, problems, fileName, value);
  if (!validateRunConfigSchema(value)) {
    for (const e of validateRunConfigSchema.errors ?? []) {
      problems.push({
        severity: 'error',
        path: [],
        code: `schema.${e.keyword}`,
        message: `after --set: ${e.instancePath.slice(1).replace(/\//g, '.') || 'config'} ${e.message ?? 'is invalid'}`,
        range: checked.doc.rangeOf([]),
      });
    }
  }
  for (const p of crossKeyProblems(SCHEMA, checked.doc, value)) {
    problems.push({
      ...p,
      path: [],
      message: `after --set: ${p.path.join('.') || 'config'}: ${p.message}`,
      range: checked.doc.rangeOf([]),
      fixes: undefined,
    });
  }
  return finish(checked.doc, problems, fileName, value);
}

function finish(doc: SourceDocument, problems: ConfigProblem[], fileName: string, value: unknown): LoadedRunConfig {
  if (problems.some((p) => p.severity === 'error')) return { doc, problems };
  return { doc, problems, config: resolveRunConfig(value as RunConfig, path.dirname(path.resolve(fileName))) };
}

/**
 * Fills every default from the schema, folds `zero_stage` into `sharding_strategy`, defaults
 * `data.seq_len` to `model.max_seq_len`, and makes data paths absolute against `baseDir`.
 */
export function resolveRunConfig(config: RunConfig, baseDir: string): ResolvedRunConfig {
  const resolved = applySchemaDefaults(SCHEMA, structuredClone(config), SCHEMA) as ResolvedRunConfig;
  const fsdp = resolved.fsdp;
  if (fsdp.zero_stage !== undefined && config.fsdp?.sharding_strategy === undefined) {
    fsdp.sharding_strategy = ZERO_STAGE_STRATEGY[fsdp.zero_stage];
  }
  delete fsdp.zero_stage;
  resolved.data.seq_len ??= resolved.model.max_seq_len;
  if (resolved.model.from_hf) resolved.model.from_hf = path.resolve(baseDir, resolved.model.from_hf);
  resolved.data.train = path.resolve(baseDir, resolved.data.train);
  if (resolved.data.val) resolved.data.val = path.resolve(baseDir, resolved.data.val);
  resolved.logging.runs_dir = path.resolve(baseDir, resolved.logging.runs_dir ?? 'runs');
  return resolved;
}

/** Sets `a.b.c=value` in a config object; the value is read as a YAML scalar or flow collection. */
export function applyOverride(target: Record<string, unknown>, assignment: string): string | undefined {
  const eq = assignment.indexOf('=');
  if (eq <= 0) return `--set ${JSON.stringify(assignment)}: expected key=value, e.g. training.max_steps=100`;
  const keys = assignment.slice(0, eq).split('.');
  // Keys that would reach Object.prototype instead of a config section.
  const hostile = keys.find((k) => k === '__proto__' || k === 'constructor' || k === 'prototype' || k === '');
  if (hostile !== undefined)
    return `--set ${keys.join('.')}: ${hostile ? `"${hostile}" is not a config key` : 'an empty key'}`;
  let value: unknown;
  try {
    value = parseYamlScalar(assignment.slice(eq + 1));
  } catch (e) {
    return `--set ${keys.join('.')}: cannot read the value: ${(e as Error).message}`;
  }
  let obj = target;
  for (const k of keys.slice(0, -1)) {
    const next = Object.hasOwn(obj, k) ? obj[k] : undefined;
    if (next === undefined) obj[k] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next))
      return `--set ${keys.join('.')}: ${k} is not a section`;
    obj = obj[k] as Record<string, unknown>;
  }
  obj[keys[keys.length - 1]] = value;
  return undefined;
}

/**
 * YAML's .inf, -.inf and .nan are numbers JSON cannot hold: the resolved config.json would say
 * null, and the runtime would report "got null" at the run folder's file instead of the user's.
 * Every number of a run config must be finite; each one that is not is reported where it is written.
 */
function nonFiniteProblems(doc: SourceDocument): ConfigProblem[] {
  // Almost every config has none: a plain walk says so without making a path or an entry (the
  // walk below, for 100,000 keys, was a fifth of such a file's check).
  if (!hasNonFiniteNumber(doc.value)) return [];
  const problems: ConfigProblem[] = [];
  // Values still to look at, each with its key and the index of its container in `entered`; a path
  // is made only for a number that is not finite (100,000 keys would otherwise make 100,000 arrays).
  const values: unknown[] = [doc.value];
  const keys: Array<string | number> = [''];
  const containers: number[] = [-1];
  const entered: Array<{ key: string | number; parent: number }> = [];
  while (values.length) {
    const value = values.pop();
    const key = keys.pop()!;
    const parent = containers.pop()!;
    if (typeof value === 'number' && !Number.isFinite(value)) {
      const at: Array<string | number> = [];
      for (let c = parent; c > 0; c = entered[c].parent) at.unshift(entered[c].key);
      if (parent >= 0) at.push(key);
      problems.push({
        severity: 'error',
        path: at,
        code: 'schema.type',
        message: `must be a finite number, got ${describeNonFinite(value)}`,
        range: doc.rangeOf(at),
      });
    } else if (value !== null && typeof value === 'object') {
      const me = entered.push({ key, parent }) - 1;
      const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
      for (const [k, v] of entries) {
        values.push(v);
        keys.push(k);
        containers.push(me);
      }
    }
  }
  return problems.reverse();
}

function hasNonFiniteNumber(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length) {
    const value = stack.pop();
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return true;
    } else if (Array.isArray(value)) {
      for (const v of value) stack.push(v);
    } else if (value !== null && typeof value === 'object') {
      for (const v of Object.values(value)) stack.push(v);
    }
  }
  return false;
}

function nonFiniteInOverride(value: Record<string, unknown>, assignment: string): string | undefined {
  const key = assignment.slice(0, assignment.indexOf('='));
  let v: unknown = value;
  for (const k of key.split('.'))
    v = v !== null && typeof v === 'object' && Object.hasOwn(v, k) ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === 'number' && !Number.isFinite(v)
    ? `--set ${key}: must be a finite number, got ${describeNonFinite(v)}`
    : undefined;
}

function describeNonFinite(x: number): string {
  return Number.isNaN(x) ? '.nan (not a number)' : x > 0 ? '.inf (infinity)' : '-.inf (minus infinity)';
}

function aliasProblems(doc: SourceDocument): ConfigProblem[] {
  const fsdp = (doc.value as RunConfig).fsdp;
  if (fsdp?.zero_stage === undefined || fsdp.sharding_strategy === undefined) return [];
  if (ZERO_STAGE_STRATEGY[fsdp.zero_stage] === fsdp.sharding_strategy) return [];
  return [
    {
      severity: 'error',
      path: ['fsdp', 'zero_stage'],
      code: 'fsdp.zero-stage-conflict',
      message: `zero_stage ${fsdp.zero_stage} means ${ZERO_STAGE_STRATEGY[fsdp.zero_stage]}, but sharding_strategy is ${fsdp.sharding_strategy}; give one of them`,
      range: doc.rangeOf(['fsdp', 'zero_stage'], 'key'),
    },
  ];
}

/**
 * Fills `default`s of absent keys, and creates absent object sections whose keys have defaults. A
 * key that means nothing here (x-only-when: model.rms_norm_eps of a gpt2 model) gets no default.
 */
function applySchemaDefaults(node: SchemaNode, value: unknown, root: SchemaNode): unknown {
  const schema = deref(node, root);
  if (!schema.properties || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const obj = value as Record<string, unknown>;
  for (const [key, child] of Object.entries(schema.properties)) {
    const childSchema = deref(child, root);
    if (obj[key] === undefined) {
      const only = child['x-only-when'] ?? childSchema['x-only-when'];
      if (!conditionHolds(only, schema, obj, root)) continue;
      const def = child.default ?? childSchema.default;
      if (def !== undefined) obj[key] = structuredClone(def);
      // An absent section is created so its keys get their defaults, unless it has required keys
      // (debug.inject_nan) or says so (launch.slurm): then its absence means "off".
      else if (childSchema.properties && !childSchema.required?.length && !childSchema['x-absent-means-off'])
        obj[key] = {};
      else continue;
    }
    obj[key] = applySchemaDefaults(child, obj[key], root);
  }
  return obj;
}

function deref(node: SchemaNode, root: SchemaNode): SchemaNode {
  if (!node.$ref) return node;
  const name = node.$ref.replace('#/definitions/', '');
  return root.definitions![name];
}
