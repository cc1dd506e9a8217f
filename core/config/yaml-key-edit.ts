// One key of a YAML file set to a new value as the smallest text edit: the value's own characters
// replaced when the key is there, else one line (or a few, for missing parent maps) inserted after
// the parent map's last entry at its indentation. The rest of the file — comments, quoting, flow
// maps such as `env: {A: 1}`, blank lines — is left byte for byte as the person wrote it.
import { isMap, isScalar, parseDocument, type Node, type Pair, type YAMLMap } from 'yaml';

export interface TextEdit {
  /** Offset of the first character replaced (UTF-16 code units, as the editor counts). */
  offset: number;
  /** How many characters are replaced (0: an insertion). */
  length: number;
  text: string;
}

/**
 * The edit that sets `path` to `value` in the YAML text, or a reason it cannot be made safely: the
 * file does not parse, or a map on the way is written in flow style or is not a map.
 */
export function setYamlKey(
  text: string,
  path: readonly string[],
  value: string | number | boolean,
): TextEdit | { error: string } {
  if (path.length === 0) return { error: 'no key to set' };
  const doc = parseDocument(text);
  if (doc.errors.length)
    return { error: `the file does not parse (${doc.errors[0].message.split('\n')[0]}); fix that first` };
  const root = doc.contents as Node | null;
  if (root === null || root === undefined)
    return {
      offset: text.length,
      length: 0,
      text: `${text.length && !text.endsWith('\n') ? '\n' : ''}${newLines(path, 0, value, '').join('\n')}\n`,
    };
  let map: Node = root;
  for (let i = 0; i < path.length; i++) {
    if (!isMap(map)) return { error: `${path.slice(0, i).join('.') || 'the document'} is not a map` };
    if (map.flow) return { error: `${path.slice(0, i).join('.')} is written as a flow map ({…}); edit it by hand` };
    const pair = (map as YAMLMap).items.find((p) => isScalar(p.key) && String(p.key.value) === path[i]) as
      Pair<Node, Node | null> | undefined;
    if (!pair) return insertAfterLastEntry(text, map as YAMLMap, path, i, value);
    if (i === path.length - 1) {
      const v = pair.value;
      if (!v || !isScalar(v) || !v.range)
        return { error: `${path.join('.')} holds ${v ? 'a map or list' : 'nothing'}, not a value` };
      return { offset: v.range[0], length: v.range[1] - v.range[0], text: scalarText(value) };
    }
    if (!pair.value) return { error: `${path.slice(0, i + 1).join('.')} is empty` };
    map = pair.value;
  }
  return { error: 'unreachable' };
}

/** Lines for path[from..]: parents as `key:` lines, the last as `key: value`, each nested two spaces deeper. */
function newLines(path: readonly string[], from: number, value: string | number | boolean, indent: string): string[] {
  const lines: string[] = [];
  for (let j = from; j < path.length; j++) {
    const pad = indent + '  '.repeat(j - from);
    lines.push(j === path.length - 1 ? `${pad}${path[j]}: ${scalarText(value)}` : `${pad}${path[j]}:`);
  }
  return lines;
}

function insertAfterLastEntry(
  text: string,
  map: YAMLMap,
  path: readonly string[],
  from: number,
  value: string | number | boolean,
): TextEdit | { error: string } {
  const items = map.items as Array<Pair<Node, Node | null>>;
  const first = items[0]?.key;
  const last = items[items.length - 1];
  if (!first?.range || !last) return { error: `cannot place ${path.join('.')} in its map` };
  const indent = ' '.repeat(first.range[0] - lineStart(text, first.range[0]));
  const lastEnd = last.value?.range?.[1] ?? last.key.range?.[1];
  if (lastEnd === undefined) return { error: `cannot place ${path.join('.')} in its map` };
  // After the last entry's line (its trailing comment stays on it).
  const nl = text.indexOf('\n', Math.max(lastEnd - 1, 0));
  const at = nl < 0 ? text.length : nl;
  return { offset: at, length: 0, text: `\n${newLines(path, from, value, indent).join('\n')}` };
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

/** A value as YAML writes it plainly: numbers and booleans as they are, strings bare when that reads back the same. */
function scalarText(value: string | number | boolean): string {
  if (typeof value !== 'string') return String(value);
  const doc = parseDocument(value);
  return !doc.errors.length && isScalar(doc.contents) && doc.contents.value === value ? value : JSON.stringify(value);
}
