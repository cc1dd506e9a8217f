// Rules between keys, declared in the schema (x-only-when, x-required-when, x-checks) rather than
// written in code: a rule stated once in core/schemas/run-config.schema.json is read here, for the
// editor and `fsdp-train`, and by native/src/config/schema_reader.cc (check_cross_keys) for the
// runtime, which receives configs no editor has seen (fsdp-train-native on a remote host). Chosen
// over one TypeScript checker run before the runtime because the runtime must refuse such a config
// by itself anyway: a TypeScript-only rule would leave it either unguarded or with a second copy.
// The keywords are generic (a sibling's value, divisibility, order): the family's rules are data.
import type { ConfigFix } from './config-edits';
import type { ConfigProblem } from './schema-problems';
import { resolve, type CrossKeyCheck, type KeyCondition, type SchemaNode } from './schema-walk';
import type { ConfigPath, SourceDocument } from './source-document';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A key's value in an object, or the schema's default for it where the object leaves it out. */
function valueOrDefault(objectSchema: SchemaNode, obj: Obj, key: string, root: SchemaNode): unknown {
  if (obj[key] !== undefined) return obj[key];
  const prop = objectSchema.properties?.[key];
  return prop?.default ?? resolve(prop, root)?.default;
}

/** Whether `condition` holds in `obj` (a sibling's value, or its default, is one of the listed values). */
export function conditionHolds(
  condition: KeyCondition | undefined,
  objectSchema: SchemaNode,
  obj: Obj,
  root: SchemaNode,
): boolean {
  if (!condition) return true;
  return Object.entries(condition).every(([key, values]) =>
    values.includes(valueOrDefault(objectSchema, obj, key, root)),
  );
}

/** "model.architecture llama or qwen3" */
function describeCondition(condition: KeyCondition, at: ConfigPath): string {
  return Object.entries(condition)
    .map(([key, values]) => `${[...at, key].join('.')} ${values.map(String).join(' or ')}`)
    .join(' and ');
}

/** "gpt2" or "gpt2 (the default)" */
function describeActual(condition: KeyCondition, objectSchema: SchemaNode, obj: Obj, root: SchemaNode): string {
  return Object.keys(condition)
    .map((key) => {
      const v = valueOrDefault(objectSchema, obj, key, root);
      return `${String(v)}${obj[key] === undefined ? ' (the default)' : ''}`;
    })
    .join(', ');
}

/**
 * Problems of the schema's cross-key rules in `value` (the document's value unless given): keys
 * given where they mean nothing, keys a condition requires, and x-checks. Tolerates values of the
 * wrong type (the schema check reports those).
 */
export function crossKeyProblems(root: SchemaNode, doc: SourceDocument, value: unknown = doc.value): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const walk = (node: SchemaNode | undefined, v: unknown, at: ConfigPath) => {
    const schema = resolve(node, root);
    if (!schema?.properties || !isObj(v)) return;
    for (const [key, child] of Object.entries(schema.properties)) {
      const prop = resolve(child, root)!;
      const path = [...at, key];
      const given = v[key] !== undefined;
      const only = prop['x-only-when'];
      const required = prop['x-required-when'];
      if (given && only && !conditionHolds(only, schema, v, root)) {
        const fix: ConfigFix = { title: `Remove ${key}`, preferred: true, edits: [{ kind: 'remove', path }] };
        problems.push({
          severity: 'error',
          path,
          code: 'schema.only-when',
          message: `only for ${describeCondition(only, at)}, not ${describeActual(only, schema, v, root)}`,
          range: doc.rangeOf(path, 'key'),
          fixes: [fix],
        });
      } else if (!given && required && conditionHolds(required, schema, v, root)) {
        problems.push({
          severity: 'error',
          path: at,
          code: 'schema.required',
          message: `missing required key "${key}" (${describeCondition(required, at)})`,
          range: doc.rangeOf(at, 'key'),
        });
      }
      if (given) walk(child, v[key], path);
    }
    for (const check of schema['x-checks'] ?? []) {
      const problem = checkProblem(check, v, at);
      if (problem) problems.push({ ...problem, range: doc.rangeOf(problem.path) });
    }
  };
  walk(root, value, []);
  return problems;
}

function checkProblem(check: CrossKeyCheck, obj: Obj, at: ConfigPath): Omit<ConfigProblem, 'range'> | undefined {
  if (check.unless !== undefined && obj[check.unless] !== undefined) return undefined;
  const other = check.divides ?? check.lessThan;
  if (other === undefined) return undefined;
  // Values as given: a required key's default (n_heads 4) must not be held to a rule while the key
  // is missing, and the keys these rules relate have no default that could break one.
  const a = obj[check.key];
  const b = obj[other];
  if (typeof a !== 'number' || typeof b !== 'number' || !Number.isFinite(a) || !Number.isFinite(b)) return undefined;
  const where = [...at, other].join('.');
  let broken: string | undefined;
  if (check.divides !== undefined && Number.isInteger(a) && Number.isInteger(b) && a >= 1 && b % a !== 0)
    broken = `${a} does not divide ${where} (${b})`;
  else if (check.lessThan !== undefined && !(a < b)) broken = `${a} is not less than ${where} (${b})`;
  if (!broken) return undefined;
  return { severity: 'error', path: [...at, check.key], code: check.code, message: `${broken}: ${check.why}` };
}

/** Every x-checks rule of a schema, for the rule catalog's hover. */
export function crossKeyChecks(root: SchemaNode): CrossKeyCheck[] {
  const out: CrossKeyCheck[] = [];
  for (const node of [root, ...Object.values(root.definitions ?? {})]) out.push(...(node['x-checks'] ?? []));
  return out;
}
