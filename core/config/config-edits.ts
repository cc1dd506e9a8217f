// Structural edits of a config (set a value, remove an entry, rename a key) turned into text edits
// that touch only that entry and keep the rest of the file, comments and layout included. Quick
// fixes are described as structural edits so the same fix works on YAML and JSON; the memory
// estimator's "apply" uses setConfigValue, which refuses what it should not do silently.
import * as jsonc from 'jsonc-parser';
import {
  isMap,
  isPair,
  isScalar,
  parseDocument,
  stringify,
  type Node as YamlNode,
  type Pair,
  type YAMLMap,
} from 'yaml';
import { sourceKindOf, type ConfigPath, type SourceKind, type SourceRange } from './source-document';
import { tomlEdit } from './toml-edits';
import { TomlSourceDocument } from './toml-document';
import { isEmptyScalar } from './yaml-document';

export type ConfigEdit =
  | { kind: 'set'; path: ConfigPath; value: unknown }
  | { kind: 'remove'; path: ConfigPath }
  | { kind: 'rename'; path: ConfigPath; to: string };

/** A quick fix: a title for the menu and the edits that make the problem go away. */
export interface ConfigFix {
  title: string;
  edits: ConfigEdit[];
  /** The fix to apply when there is no doubt which one the user wants. */
  preferred?: boolean;
}

/** A replacement of the text between two offsets of the original text. */
export interface TextReplacement {
  start: number;
  end: number;
  newText: string;
}

export interface EditOptions {
  kind: SourceKind;
  yamlVersion?: '1.1' | '1.2';
}

/** Applies the edits one after the other and returns the new text. */
export function applyConfigEdits(text: string, edits: readonly ConfigEdit[], options: EditOptions): string {
  let current = text;
  for (const edit of edits) {
    const r =
      options.kind === 'json'
        ? jsonEdit(current, edit)
        : options.kind === 'toml'
          ? tomlEdit(current, edit)
          : yamlEdit(current, edit, options.yamlVersion ?? '1.2');
    if (r) current = current.slice(0, r.start) + r.newText + current.slice(r.end);
  }
  return current;
}

export interface TextEdit {
  range: SourceRange;
  newText: string;
}

/**
 * The text with `path` set to `value` (or removed when `value` is undefined), or why it cannot be:
 * a YAML file with errors, a section where a value is expected, or a key to add inside a flow
 * mapping ({…}) are refused rather than guessed.
 */
export function setConfigValue(
  text: string,
  fileName: string,
  path: ConfigPath,
  value: unknown,
): string | { error: string } {
  const kind = sourceKindOf(fileName);
  if (kind === 'yaml') {
    const refusal = yamlRefusal(text, path, value);
    if (refusal) return { error: refusal };
  }
  if (kind === 'toml') {
    const refusal = tomlRefusal(text);
    if (refusal) return { error: refusal };
  }
  return applyConfigEdits(text, [value === undefined ? { kind: 'remove', path } : { kind: 'set', path, value }], {
    kind,
  });
}

/** One edit that turns `before` into `after`: the smallest range where they differ. */
export function diffEdit(
  before: string,
  after: string,
  positionAt: (offset: number) => SourceRange['start'],
): TextEdit | undefined {
  if (before === after) return undefined;
  const r = replacementBetween(before, after);
  return { range: { start: positionAt(r.start), end: positionAt(r.end) }, newText: r.newText };
}

/** The one replacement that turns `before` into `after` (common prefix and suffix left alone). */
export function replacementBetween(before: string, after: string): TextReplacement {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > start && endAfter > start && before[endBefore - 1] === after[endAfter - 1]) {
    endBefore--;
    endAfter--;
  }
  return { start, end: endBefore, newText: after.slice(start, endAfter) };
}

// ---- JSON -------------------------------------------------------------------------------------

function jsonEdit(text: string, edit: ConfigEdit): TextReplacement | undefined {
  const path = edit.path as jsonc.JSONPath;
  if (edit.kind === 'rename') {
    const root = jsonc.parseTree(text);
    const key = root && jsonc.findNodeAtLocation(root, path)?.parent?.children?.[0];
    return key ? { start: key.offset, end: key.offset + key.length, newText: JSON.stringify(edit.to) } : undefined;
  }
  const formattingOptions = {
    insertSpaces: !/^\t/m.test(text),
    tabSize: detectIndent(text),
    eol: text.includes('\r\n') ? '\r\n' : '\n',
  };
  const [change] = jsonc.modify(text, path, edit.kind === 'set' ? edit.value : undefined, { formattingOptions });
  return change ? { start: change.offset, end: change.offset + change.length, newText: change.content } : undefined;
}

function detectIndent(text: string): number {
  const m = /\n( +)\S/.exec(text);
  return m ? m[1].length : 2;
}

// ---- YAML -------------------------------------------------------------------------------------

function yamlEdit(text: string, edit: ConfigEdit, version: '1.1' | '1.2'): TextReplacement | undefined {
  const doc = parseDocument(text, { version, keepSourceTokens: false, logLevel: 'error' });
  const parentPath = edit.path.slice(0, -1);
  const key = String(edit.path[edit.path.length - 1]);
  const parent = nodeAt(doc.contents as YamlNode | null, parentPath);
  const pair = isMap(parent) ? findPair(parent, key) : undefined;
  if (edit.kind === 'rename') {
    const r = pair && isScalar(pair.key) ? pair.key.range : undefined;
    return r ? { start: r[0], end: r[1], newText: edit.to } : undefined;
  }
  if (edit.kind === 'remove') return pair && isMap(parent) ? removePair(text, parent, pair) : undefined;
  const rendered = renderFlow(edit.value, version);
  if (pair) {
    const value = pair.value as YamlNode | null;
    if (value?.range && !isEmptyScalar(value)) return { start: value.range[0], end: value.range[1], newText: rendered };
    const keyEnd = (pair.key as YamlNode).range![1];
    const colon = text.indexOf(':', keyEnd);
    return { start: colon + 1, end: colon + 1, newText: ` ${rendered}` };
  }
  return insertMissing(text, doc.contents as YamlNode | null, edit.path, edit.value, version);
}

function tomlRefusal(text: string): string | undefined {
  const doc = new TomlSourceDocument(text);
  return doc.syntaxErrors.length ? `cannot edit a file with TOML errors (${doc.syntaxErrors[0].message})` : undefined;
}

function yamlRefusal(text: string, path: ConfigPath, value: unknown): string | undefined {
  const doc = parseDocument(text, { keepSourceTokens: false, logLevel: 'error' });
  if (doc.errors.length) return `cannot edit a file with YAML errors (${doc.errors[0].message.split('\n')[0]})`;
  if (value === undefined) return undefined;
  let node: YamlNode | null | undefined = doc.contents as YamlNode | null;
  let depth = 0;
  while (depth < path.length && isMap(node)) {
    const pair = findPair(node, String(path[depth]));
    if (!pair) break;
    node = isEmptyScalar(pair.value) ? null : (pair.value as YamlNode | null);
    depth++;
  }
  if (depth === path.length) return node && !isScalar(node) ? `${path.join('.')} is a section, not a value` : undefined;
  const where = path.slice(0, depth).join('.') || 'the document';
  if (isMap(node) && node.flow) return `${where} is a flow mapping ({…}); edit it by hand`;
  if (node && !isMap(node)) return `${where} is not a mapping`;
  return undefined;
}

function nodeAt(root: YamlNode | null, path: ConfigPath): YamlNode | null | undefined {
  let node: YamlNode | null | undefined = root;
  for (const segment of path) {
    if (!isMap(node)) return undefined;
    const pair = findPair(node, String(segment));
    if (!pair) return undefined;
    node = pair.value as YamlNode | null;
  }
  return node;
}

function findPair(map: YAMLMap, key: string): Pair | undefined {
  return map.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key) as Pair | undefined;
}

function renderFlow(value: unknown, version: '1.1' | '1.2'): string {
  return stringify(value, { collectionStyle: 'flow', version, lineWidth: 0 }).trimEnd();
}

function removePair(text: string, parent: YAMLMap, pair: Pair): TextReplacement {
  const keyStart = (pair.key as YamlNode).range![0];
  const value = pair.value as YamlNode | null;
  const valueEnd = value?.range && !isEmptyScalar(value) ? value.range[1] : (pair.key as YamlNode).range![1];
  if (parent.flow) {
    // `{a: 1, b: 2}`: take the entry and the comma after it (or the one before, for the last entry).
    const after = /^\s*,\s*/.exec(text.slice(valueEnd));
    if (after) return { start: keyStart, end: valueEnd + after[0].length, newText: '' };
    const before = /,\s*$/.exec(text.slice(0, keyStart));
    return { start: before ? keyStart - before[0].length : keyStart, end: valueEnd, newText: '' };
  }
  // A block entry: whole lines, from the key's line to the end of the value's last line.
  const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
  const start = /^\s*$/.test(text.slice(lineStart, keyStart)) ? lineStart : keyStart;
  let end = valueEnd;
  if (end > 0 && text[end - 1] !== '\n') {
    const nl = text.indexOf('\n', end);
    end = nl === -1 ? text.length : nl + 1;
  }
  return { start, end, newText: '' };
}

/** Adds a missing key (and any missing sections above it) under its nearest existing mapping. */
function insertMissing(
  text: string,
  root: YamlNode | null,
  path: ConfigPath,
  value: unknown,
  version: '1.1' | '1.2',
): TextReplacement | undefined {
  let depth = 0;
  let node: YamlNode | null | undefined = root;
  let holder: Pair | undefined;
  while (depth < path.length - 1 && isMap(node)) {
    const pair = findPair(node, String(path[depth]));
    if (!pair) break;
    holder = pair;
    node = isEmptyScalar(pair.value) ? null : (pair.value as YamlNode | null);
    depth++;
  }
  const rest = path.slice(depth).map(String);
  if (isMap(node) && node.flow) {
    // `{a: 1}`: add `, b: {c: value}` before the closing brace.
    const nested = rest.slice(1).reduceRight<unknown>((v, k) => ({ [k]: v }), value);
    const close = text.lastIndexOf('}', node.range![1]);
    const sep = node.items.length ? ', ' : '';
    return { start: close, end: close, newText: `${sep}${rest[0]}: ${renderFlow(nested, version)}` };
  }
  if (node !== null && node !== undefined && !isMap(node)) return undefined; // a scalar or list is in the way
  let indent: number;
  let at: number;
  if (isMap(node) && node.items.length) {
    const firstKey = (node.items[0].key as YamlNode).range![0];
    indent = firstKey - (text.lastIndexOf('\n', firstKey - 1) + 1);
    const last = node.items[node.items.length - 1];
    const lastValue = last.value as YamlNode | null;
    const lastEnd = (
      lastValue?.range && !isEmptyScalar(lastValue) ? lastValue.range : (last.key as YamlNode).range!
    )[1];
    at = lastEnd > 0 && text[lastEnd - 1] === '\n' ? lastEnd : lineEndAfter(text, lastEnd);
  } else if (holder) {
    // `section:` with no value yet: the new keys go on the lines below, indented one level more.
    const keyStart = (holder.key as YamlNode).range![0];
    indent = keyStart - (text.lastIndexOf('\n', keyStart - 1) + 1) + 2;
    at = lineEndAfter(text, (holder.key as YamlNode).range![1]);
  } else {
    indent = 0;
    at = text.length;
  }
  const lines = rest.map(
    (k, i) => `${' '.repeat(indent + 2 * i)}${k}:${i === rest.length - 1 ? ` ${renderFlow(value, version)}` : ''}`,
  );
  const lead = at > 0 && text[at - 1] !== '\n' ? '\n' : '';
  return { start: at, end: at, newText: `${lead}${lines.join('\n')}\n` };
}

function lineEndAfter(text: string, offset: number): number {
  const nl = text.indexOf('\n', offset);
  return nl === -1 ? text.length : nl + 1;
}
