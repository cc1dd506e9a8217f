// Turns JSON Schema validation errors (ajv) into problems that say what is wrong in the user's
// words and point at the exact key or value: `fsdp.sharding_strategy: "FULL_SHRAD" is not one of
// NO_SHARD, ...; did you mean "FULL_SHARD"?`.
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ConfigFix } from './config-edits';
import { closestMatch } from './did-you-mean';
import { MAX_SHOWN_PROBLEMS, moreProblems } from './shown-problems';
import { forEachKnownKey, propertyOf, type SchemaNode } from './schema-walk';
import type { ConfigPath, SourceDocument, SourceRange } from './source-document';

export type ProblemSeverity = 'error' | 'warning' | 'information' | 'hint';

export interface ConfigProblem {
  severity: ProblemSeverity;
  /** Dotted path of the offending key, e.g. `fsdp.sharding_strategy`; empty for the document. */
  path: ConfigPath;
  message: string;
  range: SourceRange;
  /** Stable identifier of the rule, for quick fixes and tests: `schema.enum`, `schema.unknown-key`, ... */
  code: string;
  /** A replacement the user probably meant (misspelled key or enum value). */
  suggestion?: string;
  /** Quick fixes; each one, applied, makes this problem go away. */
  fixes?: ConfigFix[];
  /** For the summary problem `problems.more`: how many problems it stands for, and their codes. */
  more?: { count: number; codes: string[] };
}

export interface SchemaCheckOptions {
  /** The program that reads the file, for messages: "DeepSpeed ignores unknown key …". */
  tool?: string;
  /** Check this value instead of `doc.value` (e.g. with placeholders the tool drops taken out). */
  value?: unknown;
}

export function schemaProblems(
  validate: ValidateFunction,
  doc: SourceDocument,
  options: SchemaCheckOptions = {},
): ConfigProblem[] {
  const value = 'value' in options ? options.value : doc.value;
  if (value === undefined || validate(value)) return [];
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  const typeErrorAt = new Set((validate.errors ?? []).filter((e) => e.keyword === 'type').map((e) => e.instancePath));
  // "Did you mean" compares a key with every known one: worth it for typos, not for the 100,000
  // unknown keys of a generated file, so only the first SUGGESTION_BUDGET get a suggestion.
  const budget = { suggestions: SUGGESTION_BUDGET };
  // Beyond what a front end shows (shown-problems.ts), errors are only counted: positions and
  // messages for 100,000 of them were most of the work and the memory of a generated file's check.
  let hidden = 0;
  const hiddenCodes = new Set<string>();
  for (const err of validate.errors ?? []) {
    // "must be an integer" already says what "must be one of 0, 1, 2, 3" would add.
    if (err.keyword === 'enum' && typeErrorAt.has(err.instancePath)) continue;
    if (problems.length >= 2 * MAX_SHOWN_PROBLEMS) {
      hidden++;
      hiddenCodes.add(err.keyword === 'additionalProperties' ? 'schema.unknown-key' : `schema.${err.keyword}`);
      continue;
    }
    const problem = toProblem(err, doc, value, options.tool, budget);
    if (!problem) continue;
    const key = `${problem.code}|${problem.path.join('.')}|${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  if (hidden > 0) problems.push(moreProblems(hidden, [...hiddenCodes], problems[problems.length - 1].range));
  return problems;
}

/**
 * Deprecated keys (schema `deprecated: true`) with their replacement (`x-replaced-by`) and a fix
 * that switches to it. Giving both the old and the new key is an error when the tool refuses it.
 */
export function deprecatedKeyProblems(
  schema: SchemaNode,
  doc: SourceDocument,
  options: { tool?: string; bothIsError?: boolean } = {},
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  forEachKnownKey(schema, doc.value, (path, key, node, value) => {
    if (!node.deprecated) return;
    const replacement = node['x-replaced-by'];
    const parent = path.slice(0, -1);
    const target = replacement ? [...parent, ...replacement.split('.')] : undefined;
    const both = !!target && doc.has(target);
    const fixes: ConfigFix[] = [];
    if (target && !both) {
      const mapped = node['x-replacement-value'];
      if (mapped !== undefined) {
        fixes.push({
          title: value
            ? `Replace ${key} with ${replacement}: ${JSON.stringify(mapped)}`
            : `Remove ${key} (false means off)`,
          preferred: true,
          edits: value
            ? [
                { kind: 'set', path: target, value: mapped },
                { kind: 'remove', path },
              ]
            : [{ kind: 'remove', path }],
        });
      } else if (target.length === path.length) {
        fixes.push({
          title: `Rename ${key} to ${replacement}`,
          preferred: true,
          edits: [{ kind: 'rename', path, to: replacement! }],
        });
      } else {
        fixes.push({
          title: `Move ${key} to ${replacement}`,
          preferred: true,
          edits: [
            { kind: 'set', path: target, value },
            { kind: 'remove', path },
          ],
        });
      }
    }
    problems.push({
      severity: both && options.bothIsError ? 'error' : 'warning',
      path,
      code: 'schema.deprecated',
      message: both
        ? `"${key}" is deprecated and "${replacement}" is also given${options.bothIsError && options.tool ? `: ${options.tool} refuses both together` : ''}; remove "${key}"`
        : `"${key}" is deprecated${replacement ? `; use "${replacement}"` : ''}`,
      range: doc.rangeOf(path, 'key'),
      fixes: both ? [{ title: `Remove ${key}`, preferred: true, edits: [{ kind: 'remove', path }] }] : fixes,
    });
  });
  return problems;
}

/** Formats a problem as a one-line error for a terminal: `config.yaml:14:3 fsdp.x: message`. */
export function formatProblem(fileName: string, p: ConfigProblem): string {
  const where = `${fileName}:${p.range.start.line + 1}:${p.range.start.character + 1}`;
  return p.path.length ? `${where} ${p.path.join('.')}: ${p.message}` : `${where} ${p.message}`;
}

export function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

const SUGGESTION_BUDGET = 1000;

function toProblem(
  err: ErrorObject,
  doc: SourceDocument,
  root: unknown,
  tool: string | undefined,
  budget: { suggestions: number },
): ConfigProblem | undefined {
  const path = pointerToPath(err.instancePath);
  const value = valueAt(root, path);
  const params = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'additionalProperties': {
      const key = String(params.additionalProperty);
      const parent = (err.parentSchema ?? {}) as SchemaNode;
      // accelerate adds "fsdp_" to fsdp_config keys that lack it: "version" means "fsdp_version".
      if (propertyOf(parent, key)) return undefined;
      const known = Object.keys(parent.properties ?? {});
      const prefix = parent['x-key-prefix'];
      const suggestion =
        budget.suggestions-- > 0
          ? (closestMatch(key, known) ?? (prefix ? closestMatch(prefix + key, known) : undefined))
          : undefined;
      const keyPath = [...path, key];
      const ignored = parent['x-unknown-keys'] === 'ignored';
      const consequence = tool ? (ignored ? `${tool} ignores it` : `${tool} rejects it`) : '';
      const hint = suggestion
        ? `did you mean "${suggestion}"?`
        : `known keys: ${known.length > 12 ? `${known.slice(0, 12).join(', ')}, … (${known.length} in all)` : known.join(', ')}`;
      return {
        severity: ignored ? 'warning' : 'error',
        path: keyPath,
        code: 'schema.unknown-key',
        message: `unknown key "${key}"${consequence ? ` (${consequence})` : ''}; ${hint}`,
        range: doc.rangeOf(keyPath, 'key'),
        suggestion,
        fixes:
          suggestion && !doc.has([...path, suggestion])
            ? [
                {
                  title: `Rename to ${suggestion}`,
                  preferred: true,
                  edits: [{ kind: 'rename', path: keyPath, to: suggestion }],
                },
              ]
            : undefined,
      };
    }
    case 'required': {
      const missing = String(params.missingProperty);
      return {
        severity: 'error',
        path,
        code: 'schema.required',
        message: `missing required key "${missing}"`,
        range: doc.rangeOf(path, 'key'),
      };
    }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]) ?? [];
      const suggestion = typeof value === 'string' ? closestMatch(value, allowed.map(String)) : undefined;
      const list = allowed.map((v) => JSON.stringify(v).replace(/^"(.*)"$/, '$1')).join(', ');
      return {
        severity: 'error',
        path,
        code: 'schema.enum',
        message: `${JSON.stringify(value)} is not one of ${list}${suggestion ? `; did you mean "${suggestion}"?` : ''}`,
        range: doc.rangeOf(path),
        suggestion,
        fixes: suggestion
          ? [
              {
                title: `Change to ${suggestion}`,
                preferred: true,
                edits: [{ kind: 'set', path, value: allowed.find((a) => String(a) === suggestion) }],
              },
            ]
          : undefined,
      };
    }
    case 'type':
      return {
        severity: 'error',
        path,
        code: 'schema.type',
        message: `must be ${describeType(params.type)}, got ${describeValue(value)}`,
        range: doc.rangeOf(path),
      };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return {
        severity: 'error',
        path,
        code: 'schema.range',
        message: `must be ${String(params.comparison)} ${String(params.limit)}, got ${describeValue(value)}`,
        range: doc.rangeOf(path),
      };
    case 'const':
      return {
        severity: 'error',
        path,
        code: 'schema.const',
        message: `must be ${JSON.stringify(params.allowedValue)}, got ${describeValue(value)}`,
        range: doc.rangeOf(path),
      };
    case 'if':
    case 'oneOf':
    case 'anyOf':
      return undefined; // the branch errors ajv also reports say more
    default:
      return {
        severity: 'error',
        path,
        code: `schema.${err.keyword}`,
        message: err.message ?? 'is invalid',
        range: doc.rangeOf(path),
      };
  }
}

/** The value at `path` in a parsed config, or undefined where the path does not exist. */
export function valueAt(root: unknown, path: ConfigPath): unknown {
  let v: unknown = root;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

function describeType(type: unknown): string {
  const types = Array.isArray(type) ? type : [type];
  const words = types.map((t) =>
    t === 'integer' ? 'an integer' : t === 'object' ? 'a mapping' : t === 'array' ? 'a list' : `a ${String(t)}`,
  );
  return words.join(' or ');
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  if (typeof value === 'number' && Number.isInteger(value)) return String(value);
  return JSON.stringify(value);
}
