// Completion of keys (those the section does not have yet) and of values (enum values, booleans,
// examples, and "auto" where Hugging Face fills it in), each with its documentation.
import { stringify } from 'yaml';
import {
  CompletionItemKind,
  CompletionItemTag,
  InsertTextFormat,
  type CompletionItem,
  type CompletionList,
} from 'vscode-languageserver/node';
import { yamlVersionOf, type ConfigAnalysis } from '../../core/config/config-analysis';
import { conditionHolds } from '../../core/config/schema-cross-keys';
import { describeAllowed, isSection, resolve, schemaAt, typesOf, type SchemaNode } from '../../core/config/schema-walk';
import type { CursorLocation } from '../../core/config/source-document';
import { renderToml } from '../../core/config/toml-edits';
import { FILLED_BY_HUGGING_FACE } from '../../core/rules/deepspeed/auto-values';
import { valueAt } from '../../core/rules/rule';
import type { ServerFeature } from './feature';

export const completion: ServerFeature = {
  capabilities: { completionProvider: { triggerCharacters: ['"', ':', ' '] } },
  register(server) {
    server.connection.onCompletion((params): CompletionList | null => {
      const analysis = server.analysisOf(params.textDocument.uri);
      if (!analysis) return null;
      const offset = analysis.doc.offsetAt(params.position);
      const loc = analysis.doc.locate(offset);
      const items = loc.part === 'key' ? keyItems(analysis, loc) : valueItems(analysis, loc);
      return { isIncomplete: false, items };
    });
  },
};

function keyItems(analysis: ConfigAnalysis, loc: CursorLocation): CompletionItem[] {
  const section = schemaAt(analysis.schema, loc.path);
  if (!section?.properties) return [];
  const present = valueAt(analysis.doc.value, loc.path);
  const existing = new Set(present && typeof present === 'object' ? Object.keys(present) : []);
  const typed = loc.word.text.replace(/^["']|["']$/g, '');
  const { doc } = analysis;
  const quoted = doc.kind === 'json' && doc.text[loc.word.start - 1] === '"';
  const lineStart = doc.text.lastIndexOf('\n', loc.word.start - 1) + 1;
  const column = loc.word.start - lineStart;
  // TOML: in a `[table.header]` only the name goes in; a sub-table as a key becomes a dotted key.
  const inHeader = doc.kind === 'toml' && /^\s*\[\[?[\w.\s-]*$/.test(doc.text.slice(lineStart, loc.word.start));
  const items: CompletionItem[] = [];
  const siblings = present && typeof present === 'object' && !Array.isArray(present) ? (present as object) : {};
  for (const [key, raw] of Object.entries(section.properties)) {
    if (existing.has(key) && key !== typed) continue;
    const node = resolve(raw, analysis.schema) ?? raw;
    // A key that means nothing here (x-only-when: model.n_kv_heads of a gpt2 model) would be refused.
    if (!conditionHolds(node['x-only-when'], section, siblings as Record<string, unknown>, analysis.schema)) continue;
    const insert =
      doc.kind === 'json'
        ? quoted
          ? key
          : `"${key}": `
        : doc.kind === 'toml'
          ? inHeader
            ? key
            : isSection(node)
              ? `${key}.`
              : `${key} = `
          : isSection(node)
            ? `${key}:\n${' '.repeat(column + 2)}`
            : `${key}: `;
    items.push({
      label: key,
      kind: isSection(node) ? CompletionItemKind.Module : CompletionItemKind.Property,
      detail: describeAllowed(node) || undefined,
      documentation: { kind: 'markdown', value: documentation(node) },
      tags: node.deprecated ? [CompletionItemTag.Deprecated] : undefined,
      sortText: `${node.deprecated ? '1' : '0'}${key}`,
      textEdit: { range: rangeOf(analysis, loc), newText: insert },
      insertTextFormat: InsertTextFormat.PlainText,
    });
  }
  return items;
}

function valueItems(analysis: ConfigAnalysis, loc: CursorLocation): CompletionItem[] {
  const node = schemaAt(analysis.schema, loc.path);
  if (!node) return [];
  const values: unknown[] = [];
  const add = (v: unknown) => {
    if (!values.some((x) => x === v)) values.push(v);
  };
  for (const v of node.enum ?? []) add(v);
  if (typesOf(node).includes('boolean')) [true, false].forEach(add);
  for (const v of node.examples ?? []) add(v);
  if (node.default !== undefined && (typeof node.default !== 'object' || node.default === null)) add(node.default);
  if (analysis.kind === 'deepspeed' && FILLED_BY_HUGGING_FACE.has(loc.path.join('.'))) add('auto');
  const version = yamlVersionOf(analysis.kind);
  return values.map((v, i) => {
    const text =
      analysis.doc.kind === 'json'
        ? JSON.stringify(v)
        : analysis.doc.kind === 'toml'
          ? renderToml(v)
          : stringify(v, { version }).trimEnd();
    return {
      label: text,
      kind: CompletionItemKind.Value,
      detail: v === node.default ? 'default' : v === 'auto' ? 'filled in by Hugging Face' : undefined,
      documentation: node.description ? { kind: 'markdown', value: node.description } : undefined,
      sortText: String(i).padStart(3, '0'),
      textEdit: { range: rangeOf(analysis, loc), newText: text },
    };
  });
}

function documentation(node: SchemaNode): string {
  return [node.description, node.default !== undefined ? `Default: \`${JSON.stringify(node.default)}\`` : undefined]
    .filter(Boolean)
    .join('\n\n');
}

function rangeOf(analysis: ConfigAnalysis, loc: CursorLocation) {
  return { start: analysis.doc.positionAt(loc.word.start), end: analysis.doc.positionAt(loc.word.end) };
}
