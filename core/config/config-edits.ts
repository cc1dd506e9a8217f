// Sets or removes one key of a YAML or JSON-with-comments config by editing its text in place:
// the rest of the file (comments, order, formatting) stays byte for byte as it was.
import * as jsonc from 'jsonc-parser';
import { isMap, isPair, isScalar, parseDocument, stringify, type Node as YamlNode, type Pair, type YAMLMap } from 'yaml';
import { sourceKindOf, type ConfigPath, type SourceRange } from './source-document';

export interface TextEdit {
  range: SourceRange;
  newText: string;
}

/** The text with `path` set to `value` (or removed when `value` is undefined), or why it cannot be. */
export function setConfigValue(text: string, fileName: string, path: ConfigPath, value: unknown): string | { error: string } {
  return sourceKindOf(fileName) === 'json' ? setJsonValue(text, path, value) : setYamlValue(text, path, value);
}

/** One edit that turns `before` into `after`: the smallest range where they differ. */
export function diffEdit(before: string, after: string, positionAt: (offset: number) => SourceRange['start']): TextEdit | undefined {
  if (before === after) return undefined;
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > start && endAfter > start && before[endBefore - 1] === after[endAfter - 1]) {
    endBefore--;
    endAfter--;
  }
  return { range: { start: positionAt(start), end: positionAt(endBefore) }, newText: after.slice(start, endAfter) };
}

function setJsonValue(text: string, path: ConfigPath, value: unknown): string {
  const indent = /\n([ \t]+)\S/.exec(text)?.[1] ?? '  ';
  const edits = jsonc.modify(text, path as jsonc.JSONPath, value, {
    formattingOptions: { insertSpaces: !indent.startsWith('\t'), tabSize: indent.startsWith('\t') ? 1 : indent.length, eol: text.includes('\r\n') ? '\r\n' : '\n' },
  });
  return jsonc.applyEdits(text, edits);
}

function setYamlValue(text: string, path: ConfigPath, value: unknown): string | { error: string } {
  const doc = parseDocument(text, { keepSourceTokens: false });
  if (doc.errors.length) return { error: `cannot edit a file with YAML errors (${doc.errors[0].message.split('\n')[0]})` };
  // Walk down as far as the path exists.
  let node: YamlNode | null = (doc.contents as YamlNode | null) ?? null;
  let pair: Pair | undefined;
  let depth = 0;
  for (const key of path) {
    if (!isMap(node)) break;
    const item = (node as YAMLMap).items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(key)) as Pair | undefined;
    if (!item) break;
    pair = item;
    node = (item.value as YamlNode | null) ?? null;
    depth++;
  }
  if (depth === path.length && pair) {
    if (value === undefined) return removeLine(text, pair);
    if (node && !isScalar(node)) return { error: `${path.join('.')} is a section, not a value` };
    const scalar = yamlScalar(value);
    if (node?.range) return text.slice(0, node.range[0]) + scalar + text.slice(node.range[1]);
    const keyEnd = (pair.key as YamlNode).range![1];
    const colon = text.indexOf(':', keyEnd);
    return text.slice(0, colon + 1) + ' ' + scalar + text.slice(colon + 1).replace(/^[ \t]*/, '');
  }
  if (value === undefined) return text; // nothing to remove
  const rest = path.slice(depth);
  if (node === null && pair) {
    // `section:` with nothing under it: add the keys one level deeper than the section's key.
    const keyStart = (pair.key as YamlNode).range![0];
    return insertAfterLine(text, keyStart, columnOf(text, keyStart) + 2, rest, value);
  }
  if (node === null) return text + (text.endsWith('\n') || text === '' ? '' : '\n') + nestedLines(0, rest, value) + '\n';
  if (!isMap(node)) return { error: `${path.slice(0, depth).join('.') || 'the document'} is not a mapping` };
  const map = node as YAMLMap;
  if (map.flow) return { error: `${path.slice(0, depth).join('.') || 'the document'} is a flow mapping ({…}); edit it by hand` };
  const first = map.items[0] as Pair;
  const last = map.items[map.items.length - 1] as Pair;
  const indent = columnOf(text, (first.key as YamlNode).range![0]);
  const lastEnd = ((last.value as YamlNode | null)?.range ?? (last.key as YamlNode).range!)[1];
  return insertAfterLine(text, Math.max(0, lastEnd - 1), indent, rest, value);
}

/** Inserts the nested keys on new lines after the line containing `offset`. */
function insertAfterLine(text: string, offset: number, indent: number, rest: ConfigPath, value: unknown): string {
  let lineEnd = text.indexOf('\n', offset);
  if (lineEnd < 0) lineEnd = text.length;
  const eol = text[lineEnd - 1] === '\r' ? '\r\n' : '\n';
  const at = text[lineEnd - 1] === '\r' ? lineEnd - 1 : lineEnd;
  return text.slice(0, at) + eol + nestedLines(indent, rest, value) + text.slice(at);
}

function nestedLines(indent: number, rest: ConfigPath, value: unknown): string {
  return rest
    .map((key, i) => `${' '.repeat(indent + 2 * i)}${String(key)}:${i === rest.length - 1 ? ` ${yamlScalar(value)}` : ''}`)
    .join('\n');
}

function removeLine(text: string, pair: Pair): string {
  const start = text.lastIndexOf('\n', (pair.key as YamlNode).range![0] - 1) + 1;
  const valueEnd = ((pair.value as YamlNode | null)?.range ?? (pair.key as YamlNode).range!)[1];
  let end = text.indexOf('\n', Math.max(valueEnd - 1, 0));
  end = end < 0 ? text.length : end + 1;
  return text.slice(0, start) + text.slice(end);
}

function columnOf(text: string, offset: number): number {
  return offset - (text.lastIndexOf('\n', offset - 1) + 1);
}

function yamlScalar(value: unknown): string {
  return stringify(value).trimEnd();
}
