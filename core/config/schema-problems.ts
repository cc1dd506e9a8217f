// Turns JSON Schema validation errors (ajv) into problems that say what is wrong in the user's
// words and point at the exact key or value: `fsdp.sharding_strategy: "FULL_SHRAD" is not one of
// NO_SHARD, ...; did you mean "FULL_SHARD"?`.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { closestMatch } from './did-you-mean';
import type { ConfigPath, SourceDocument, SourceRange } from './source-document';

export type ProblemSeverity = 'error' | 'warning' | 'information';

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
}

export function schemaProblems(validate: ValidateFunction, doc: SourceDocument): ConfigProblem[] {
  if (doc.value === undefined || validate(doc.value)) return [];
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  for (const err of validate.errors ?? []) {
    const problem = toProblem(err, doc);
    if (!problem) continue;
    const key = `${problem.code}|${problem.path.join('.')}|${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
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

function toProblem(err: ErrorObject, doc: SourceDocument): ConfigProblem | undefined {
  const path = pointerToPath(err.instancePath);
  const value = valueAt(doc.value, path);
  const params = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'additionalProperties': {
      const key = String(params.additionalProperty);
      const known = Object.keys((err.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const suggestion = closestMatch(key, known);
      const keyPath = [...path, key];
      return {
        severity: 'error',
        path: keyPath,
        code: 'schema.unknown-key',
        message: suggestion ? `unknown key "${key}"; did you mean "${suggestion}"?` : `unknown key "${key}"; known keys: ${known.join(', ')}`,
        range: doc.rangeOf(keyPath, 'key'),
        suggestion,
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

function valueAt(root: unknown, path: ConfigPath): unknown {
  let v: unknown = root;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

function describeType(type: unknown): string {
  const types = Array.isArray(type) ? type : [type];
  const words = types.map((t) => (t === 'integer' ? 'an integer' : t === 'object' ? 'a mapping' : t === 'array' ? 'a list' : `a ${String(t)}`));
  return words.join(' or ');
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  if (typeof value === 'number' && Number.isInteger(value)) return String(value);
  return JSON.stringify(value);
}
