// TOML (torchtitan's job configs) parsed with toml-eslint-parser, which keeps every key, table and
// value with its offsets, as the YAML and JSON documents do. It implements TOML 1.0 exactly
// (duplicate keys and redefined tables are errors, as Python's tomllib says) and stops at the first
// error; so a document being typed is located by its lines: the last `[table]` header above the
// cursor and the `key = value` line under it.
import { getStaticTOMLValue, parseTOML, type AST } from 'toml-eslint-parser';
import type { ConfigPath, CursorLocation, SourceDocument, SourceRange, SyntaxProblem } from './source-document';
import { TextPositions } from './text-positions';

interface Entry {
  /** The key's offsets: the last key segment of a key-value, the table header's key for a table. */
  key?: [number, number];
  /** The value's offsets: the value of a key-value, the whole table for a table. */
  value: [number, number];
}

export class TomlSourceDocument extends TextPositions implements SourceDocument {
  readonly kind = 'toml' as const;
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[] = [];
  /** Every path the document defines, by its segments joined with NUL. */
  private readonly entries = new Map<string, Entry>();

  constructor(text: string) {
    super(text);
    let ast: AST.TOMLProgram | undefined;
    try {
      ast = parseTOML(text);
    } catch (e) {
      const err = e as { message: string; index?: number };
      const at = typeof err.index === 'number' ? err.index : 0;
      this.syntaxErrors.push({ message: `TOML: ${err.message}`, range: this.range(at, Math.min(text.length, at + 1)) });
    }
    if (ast) {
      this.value = normaliseNumbers(getStaticTOMLValue(ast));
      this.index(ast);
    } else {
      this.value = undefined;
    }
  }

  has(path: ConfigPath): boolean {
    return this.entries.has(keyOf(path));
  }

  rangeOf(path: ConfigPath, part: 'key' | 'value' = 'value'): SourceRange {
    for (let depth = path.length; depth >= 0; depth--) {
      const entry = this.entries.get(keyOf(path.slice(0, depth)));
      if (!entry) continue;
      // A missing child points at its parent's key, where the user would add it.
      const span = (part === 'key' || depth < path.length) && entry.key ? entry.key : entry.value;
      return this.range(span[0], trimEnd(this.text, span[0], span[1]));
    }
    return this.range(0, 0);
  }

  valueSpan(path: ConfigPath): { start: number; end: number } | undefined {
    const entry = this.entries.get(keyOf(path));
    return entry ? { start: entry.value[0], end: entry.value[1] } : undefined;
  }

  locate(offset: number): CursorLocation {
    const lineStart = this.text.lastIndexOf('\n', offset - 1) + 1;
    const before = this.text.slice(lineStart, offset);
    const word = this.wordAt(offset);
    // Inside a table header: the keys before the one being typed are the section.
    const header = /^\s*\[\[?\s*([\w.-]*)$/.exec(before);
    if (header) {
      const parts = header[1].split('.');
      const typed = parts.pop() ?? '';
      const start = offset - typed.length;
      return {
        path: parts.filter(Boolean),
        part: 'key',
        word: { text: typed, start, end: start + (this.wordAt(offset).end - offset) + typed.length },
      };
    }
    const table = this.tableAt(lineStart);
    const keyValue = /^\s*([\w.-]+)\s*=\s*/.exec(before);
    if (keyValue)
      return {
        path: [...table, ...keyValue[1].split('.')],
        part: 'value',
        word: valueWord(this.text, offset, lineStart + keyValue[0].length, word),
      };
    // A dotted key being typed (`float8.ena|`): its first segments are sections.
    const dotted = /^\s*([\w-]+(?:\.[\w-]+)*)\.[\w-]*$/.exec(before);
    const prefix = dotted ? dotted[1].split('.') : [];
    const keyStart = offset - (/[\w-]*$/.exec(before)?.[0].length ?? 0);
    const keyEnd = word.end;
    return {
      path: [...table, ...prefix],
      part: 'key',
      word: { text: this.text.slice(keyStart, keyEnd), start: keyStart, end: keyEnd },
    };
  }

  /** The table whose body holds the line starting at `lineStart`: the last header above it. */
  private tableAt(lineStart: number): string[] {
    const above = this.text.slice(0, lineStart);
    const headers = [...above.matchAll(/^[ \t]*\[\[?[ \t]*([^\]\n]*?)[ \t]*\]\]?[ \t]*(?:#.*)?$/gm)];
    const last = headers[headers.length - 1];
    if (!last) return [];
    const path: (string | number)[] = splitKey(last[1]);
    // An array of tables: the body belongs to its last element.
    if (last[0].trimStart().startsWith('[[')) {
      const items = valueAtPath(this.value, path);
      return [...(path as string[]), ...(Array.isArray(items) && items.length ? [String(items.length - 1)] : [])];
    }
    return path as string[];
  }

  private index(ast: AST.TOMLProgram): void {
    const top = ast.body[0];
    this.entries.set(keyOf([]), { value: [0, this.text.length] });
    const arrayCounts = new Map<string, number>();
    for (const item of top.body) {
      if (item.type === 'TOMLKeyValue') {
        this.indexKeyValue(item, []);
        continue;
      }
      const names = item.resolvedKey.slice();
      const keys = item.key.keys;
      // Each prefix of the header names a (possibly implicit) table.
      for (let i = 0; i < keys.length - 1; i++) {
        const p = names.slice(0, i + 1);
        if (!this.entries.has(keyOf(p)))
          this.entries.set(keyOf(p), { key: keys[i].range, value: [item.range[0], item.range[1]] });
      }
      if (item.kind === 'array') {
        const arrayPath = names.slice(0, keys.length);
        const k = keyOf(arrayPath);
        const n = arrayCounts.get(k) ?? 0;
        arrayCounts.set(k, n + 1);
        if (!this.entries.has(k)) this.entries.set(k, { key: keys[keys.length - 1].range, value: item.range });
        else this.entries.get(k)!.value[1] = item.range[1];
        this.entries.set(keyOf([...arrayPath, n]), { key: item.key.range, value: item.range });
        for (const kv of item.body) this.indexKeyValue(kv, [...arrayPath, n]);
      } else {
        const path = names as (string | number)[];
        this.entries.set(keyOf(path), { key: keys[keys.length - 1].range, value: item.range });
        for (const kv of item.body) this.indexKeyValue(kv, path);
      }
    }
  }

  private indexKeyValue(kv: AST.TOMLKeyValue, table: (string | number)[]): void {
    const keys = kv.key.keys;
    const names = keys.map(keyName);
    for (let i = 0; i < keys.length - 1; i++) {
      const p = [...table, ...names.slice(0, i + 1)];
      if (!this.entries.has(keyOf(p))) this.entries.set(keyOf(p), { key: keys[i].range, value: kv.range });
    }
    const path = [...table, ...names];
    this.entries.set(keyOf(path), { key: keys[keys.length - 1].range, value: kv.value.range });
    this.indexValue(kv.value, path);
  }

  private indexValue(value: AST.TOMLContentNode, path: (string | number)[]): void {
    if (value.type === 'TOMLInlineTable') {
      for (const kv of value.body) this.indexKeyValue(kv, path);
    } else if (value.type === 'TOMLArray') {
      value.elements.forEach((el, i) => {
        this.entries.set(keyOf([...path, i]), { value: el.range });
        this.indexValue(el, [...path, i]);
      });
    }
  }
}

function keyName(k: AST.TOMLBare | AST.TOMLQuoted): string {
  return k.type === 'TOMLBare' ? k.name : k.value;
}

function keyOf(path: ConfigPath): string {
  return path.map(String).join('\u0000');
}

/** A header's dotted key as segments (bare or quoted). */
function splitKey(key: string): string[] {
  const out: string[] = [];
  for (const m of key.matchAll(/\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([\w-]+))\s*(?:\.|$)/g))
    out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

function valueAtPath(root: unknown, path: (string | number)[]): unknown {
  let v = root;
  for (const s of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[s];
  }
  return v;
}

/** The value under the cursor: a whole string with its quotes, else the word. */
function valueWord(
  text: string,
  offset: number,
  valueStart: number,
  word: { text: string; start: number; end: number },
) {
  const quote = text[valueStart];
  if (quote === '"' || quote === "'") {
    const close = text.indexOf(quote, valueStart + 1);
    const lineEnd = text.indexOf('\n', valueStart);
    const end = close >= 0 && (lineEnd < 0 || close < lineEnd) ? close + 1 : lineEnd < 0 ? text.length : lineEnd;
    if (offset >= valueStart && offset <= end) return { text: text.slice(valueStart, end), start: valueStart, end };
  }
  return word;
}

/** A table's range runs over the blank lines and comments after it; the squiggle should not. */
function trimEnd(text: string, start: number, end: number): number {
  let e = end;
  while (e > start && /\s/.test(text[e - 1])) e--;
  return e;
}

/** TOML integers beyond 2^53 come back as bigint; configs have none that large, numbers are easier to check. */
function normaliseNumbers(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(normaliseNumbers);
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = normaliseNumbers(x);
    return out;
  }
  return v;
}
