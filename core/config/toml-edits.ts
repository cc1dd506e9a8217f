// Structural edits of a TOML config as text replacements that touch one entry: a value replaced in
// place, a key renamed, a `key = value` line removed or added to its table (the table created at
// the end of the file when it is missing), comments and layout kept.
import type { ConfigEdit, TextReplacement } from './config-edits';
import type { ConfigPath } from './source-document';
import { TomlSourceDocument } from './toml-document';

export function tomlEdit(text: string, edit: ConfigEdit): TextReplacement | undefined {
  const doc = new TomlSourceDocument(text);
  if (doc.syntaxErrors.length) return undefined;
  const path = edit.path;
  const key = String(path[path.length - 1]);
  if (edit.kind === 'rename') {
    if (!doc.has(path)) return undefined;
    const r = doc.rangeOf(path, 'key');
    return { start: doc.offsetAt(r.start), end: doc.offsetAt(r.end), newText: bareOrQuoted(edit.to) };
  }
  if (edit.kind === 'remove') {
    if (!doc.has(path)) return undefined;
    const keyStart = doc.offsetAt(doc.rangeOf(path, 'key').start);
    const span = doc.valueSpan(path)!;
    const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
    // A key-value on a line of its own goes with its line (and its trailing comment).
    if (/^\s*$/.test(text.slice(lineStart, keyStart))) {
      const nl = text.indexOf('\n', span.end);
      return { start: lineStart, end: nl < 0 ? text.length : nl + 1, newText: '' };
    }
    return { start: keyStart, end: span.end, newText: '' };
  }
  const rendered = renderToml(edit.value);
  if (doc.has(path) && !isTable(doc, path)) {
    const span = doc.valueSpan(path)!;
    return { start: span.start, end: span.end, newText: rendered };
  }
  return insertKey(text, path.slice(0, -1), key, rendered);
}

/** TOML for a JSON-like value: strings as basic strings, numbers, booleans, arrays and inline tables. */
export function renderToml(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number')
    return Number.isFinite(value) ? String(value) : value > 0 ? 'inf' : value < 0 ? '-inf' : 'nan';
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(renderToml).join(', ')}]`;
  if (value && typeof value === 'object')
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${bareOrQuoted(k)} = ${renderToml(v)}`)
      .join(', ')} }`;
  return '""';
}

function bareOrQuoted(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

function isTable(doc: TomlSourceDocument, path: ConfigPath): boolean {
  let v: unknown = doc.value;
  for (const s of path) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[s] : undefined;
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/**
 * `key = value` added to the table at `table`: after its last key-value line when the file has a
 * `[table]` header for it, at the top (before the first header) for the root, else a new
 * `[table]` at the end of the file.
 */
function insertKey(text: string, table: ConfigPath, key: string, rendered: string): TextReplacement {
  const line = `${bareOrQuoted(key)} = ${rendered}\n`;
  if (table.length === 0) {
    const firstHeader = /^[ \t]*\[/m.exec(text);
    const at = firstHeader ? firstHeader.index : text.length;
    const lead = at > 0 && text[at - 1] !== '\n' ? '\n' : '';
    return { start: at, end: at, newText: `${lead}${line}${firstHeader ? '\n' : ''}` };
  }
  const header = headerOf(text, table);
  if (header) {
    // After the table's last non-blank, non-comment line before the next header.
    const bodyStart = text.indexOf('\n', header.index) + 1 || text.length;
    const next = /^[ \t]*\[/m.exec(text.slice(bodyStart));
    const bodyEnd = next ? bodyStart + next.index : text.length;
    const lines = text.slice(bodyStart, bodyEnd).split('\n');
    let offset = bodyStart;
    let at = bodyStart;
    for (const l of lines) {
      const end = offset + l.length + 1;
      if (l.trim() && !l.trim().startsWith('#')) at = Math.min(end, text.length);
      offset = end;
    }
    const lead = at > 0 && text[at - 1] !== '\n' ? '\n' : '';
    return { start: at, end: at, newText: `${lead}${line}` };
  }
  const lead = text.length === 0 ? '' : text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  return {
    start: text.length,
    end: text.length,
    newText: `${lead}[${table.map((s) => bareOrQuoted(String(s))).join('.')}]\n${line}`,
  };
}

function headerOf(text: string, table: ConfigPath): RegExpExecArray | undefined {
  const name = table.map(String).join('.');
  for (const m of text.matchAll(/^[ \t]*\[[ \t]*([^\]\n]+?)[ \t]*\][ \t]*(?:#.*)?$/gm)) {
    if (m[1].replace(/["'\s]/g, '') === name) return m as RegExpExecArray;
  }
  return undefined;
}
