// Reading a JSON Schema by config path: which keys a section has, what a key means, its type,
// default and allowed values. Completion, hover and the deprecation check all ask these questions.
import type { ConfigPath } from './source-document';

/** The subset of JSON Schema (draft-07) our schemas use, plus our `x-` annotations. */
export interface SchemaNode {
  $ref?: string;
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  examples?: unknown[];
  properties?: Record<string, SchemaNode>;
  additionalProperties?: boolean | SchemaNode;
  items?: SchemaNode;
  required?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  deprecated?: boolean;
  definitions?: Record<string, SchemaNode>;
  /** "ignored": the tool silently ignores unknown keys of this object (a warning, not an error). */
  'x-unknown-keys'?: 'ignored';
  /** The prefix the tool adds to keys of this object that lack it (accelerate's fsdp_config). */
  'x-key-prefix'?: string;
  /** Deprecated key: its replacement, a path relative to the object holding the key. */
  'x-replaced-by'?: string;
  /** Deprecated boolean key: the replacement's value when the old key is true. */
  'x-replacement-value'?: unknown;
  /** A section whose absence means "not this way" (launch.slurm): not created to hold defaults. */
  'x-absent-means-off'?: boolean;
  /** The key means something only where a sibling has one of these values (./schema-cross-keys.ts). */
  'x-only-when'?: KeyCondition;
  /** The key must be given where a sibling has one of these values. */
  'x-required-when'?: KeyCondition;
  /** Rules between keys of this object (./schema-cross-keys.ts). */
  'x-checks'?: CrossKeyCheck[];
}

/** One sibling key and the values under which a key applies: `{ "architecture": ["llama", "qwen3"] }`. */
export type KeyCondition = Record<string, unknown[]>;

/** A rule between two number keys of one object: `key` divides `divides`, or is less than `lessThan`. */
export interface CrossKeyCheck {
  /** The diagnostic's code, for quick fixes, hover and tests. */
  code: string;
  key: string;
  divides?: string;
  lessThan?: string;
  /** The rule does not apply where this key is given (d_model / n_heads, unless head_dim). */
  unless?: string;
  /** Why the rule exists, said after the problem and on hover. */
  why: string;
}

/** Follows `$ref`s into the root schema's definitions, merging the referring node's own annotations. */
export function resolve(node: SchemaNode | undefined, root: SchemaNode): SchemaNode | undefined {
  if (!node?.$ref) return node;
  const name = node.$ref.replace('#/definitions/', '');
  const target = root.definitions?.[name];
  if (!target) return undefined;
  const { $ref: _ref, ...own } = node;
  return { ...resolve(target, root), ...own };
}

/** The schema of the value at `path`, or undefined where the schema says nothing (open objects). */
export function schemaAt(root: SchemaNode, path: ConfigPath): SchemaNode | undefined {
  let node = resolve(root, root);
  for (const segment of path) {
    if (!node) return undefined;
    if (typeof segment === 'number') {
      node = resolve(node.items, root);
      continue;
    }
    node = resolve(propertyOf(node, segment), root);
  }
  return node;
}

/** A key's schema within an object's schema, honouring the prefix the tool would add. */
export function propertyOf(node: SchemaNode, key: string): SchemaNode | undefined {
  const props = node.properties ?? {};
  if (Object.prototype.hasOwnProperty.call(props, key)) return props[key];
  const prefix = node['x-key-prefix'];
  if (prefix && !key.startsWith(prefix) && Object.prototype.hasOwnProperty.call(props, prefix + key))
    return props[prefix + key];
  return undefined;
}

export function typesOf(node: SchemaNode): string[] {
  return node.type === undefined ? [] : Array.isArray(node.type) ? node.type : [node.type];
}

/** Whether the schema describes a section (an object with known keys). */
export function isSection(node: SchemaNode | undefined): boolean {
  return !!node?.properties && typesOf(node).includes('object');
}

/** A one-line statement of what a value must be: "integer, 0 … 3" or "one of none, cpu, nvme". */
export function describeAllowed(node: SchemaNode): string {
  if (node.enum) return `one of ${node.enum.map((v) => (v === null ? 'null' : String(v))).join(', ')}`;
  const types = typesOf(node).filter((t) => t !== 'null');
  const bounds: string[] = [];
  if (node.minimum !== undefined) bounds.push(`≥ ${node.minimum}`);
  if (node.exclusiveMinimum !== undefined) bounds.push(`> ${node.exclusiveMinimum}`);
  if (node.maximum !== undefined) bounds.push(`≤ ${node.maximum}`);
  if (node.exclusiveMaximum !== undefined) bounds.push(`< ${node.exclusiveMaximum}`);
  const words = types.map((t) => (t === 'object' ? 'mapping' : t === 'array' ? 'list' : t));
  return [words.join(' or '), bounds.join(', ')].filter(Boolean).join(', ');
}

/**
 * Visits every key present in `value` that the schema knows, with its schema: the walk the
 * deprecation check and the "auto" check need.
 */
export function forEachKnownKey(
  root: SchemaNode,
  value: unknown,
  visit: (path: (string | number)[], key: string, node: SchemaNode, value: unknown) => void,
): void {
  const walk = (node: SchemaNode | undefined, v: unknown, path: (string | number)[]) => {
    if (!node || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      v.forEach((item, i) => walk(resolve(node.items, root), item, [...path, i]));
      return;
    }
    // Object.keys, not Object.entries: for a 100k-key mapping the pairs cost 2-3 times the walk.
    const object = v as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const child = object[key];
      const prop = resolve(propertyOf(node, key), root);
      if (!prop) continue;
      visit([...path, key], key, prop, child);
      walk(prop, child, [...path, key]);
    }
  };
  walk(resolve(root, root), value, []);
}
