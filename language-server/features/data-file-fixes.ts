// Quick fixes for a run config whose data file (data.train, data.val) does not exist: "Change to …"
// for the token files near the config whose names are closest (a typo, a moved folder), and
// "Prepare the sample data" when the missing file is one samples/prepare-data.ts writes (the
// extension runs it: command fsdp.prepareSampleData).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { CodeActionKind, type CodeAction, type Diagnostic } from 'vscode-languageserver/node';
import type { ConfigAnalysis } from '../../core/config/config-analysis';
import { DIAGNOSTIC_SOURCE, textEditFor } from '../lsp-conversions';
import { addCodeActionSource } from './code-actions';
import type { ServerFeature } from './feature';

export const PREPARE_SAMPLE_DATA_COMMAND = 'fsdp.prepareSampleData';
const DATA_KEYS = ['train', 'val'] as const;
/** Token files prepare-data.ts writes: fortunes-<tokenizer>-<split>.tok. */
const SAMPLE_FILE = /^fortunes-(byte|gpt2)-(train|val)\.tok$/;
const SUGGESTIONS = 3;
/** Folders below the config's searched for token files, and what is never searched. */
const SEARCH_DEPTH = 3;
const SKIP_DIRS = new Set(['node_modules', '.git', 'runs', 'checkpoints']);
const MAX_FILES = 2000;

export const dataFileFixes: ServerFeature = {
  // The code-action capability is announced by code-actions.ts, which asks this source.
  capabilities: {},
  register() {
    addCodeActionSource(dataFileActions);
  },
};

function dataFileActions(analysis: ConfigAnalysis, d: Diagnostic, uri: string): CodeAction[] {
  if (analysis.kind !== 'run-config' || d.source !== DIAGNOSTIC_SOURCE) return [];
  const actions: CodeAction[] = [];
  for (const key of DATA_KEYS) {
    const at = ['data', key];
    const value = (analysis.doc.value as { data?: Record<string, unknown> } | undefined)?.data?.[key];
    if (typeof value !== 'string' || !analysis.doc.has(at)) continue;
    const range = analysis.doc.rangeOf(at, 'value');
    if (d.range.start.line !== range.start.line) continue;
    const base = path.dirname(path.resolve(analysis.fileName));
    const missing = path.resolve(base, value);
    if (existsSync(missing)) continue;
    for (const [i, candidate] of closestTokenFiles(base, missing).entries()) {
      const relative = path.relative(base, candidate);
      const fix = { title: `Change to ${relative}`, edits: [{ kind: 'set' as const, path: at, value: relative }] };
      actions.push({
        title: fix.title,
        kind: CodeActionKind.QuickFix,
        diagnostics: [d],
        isPreferred: i === 0,
        edit: { changes: { [uri]: [textEditFor(analysis, fix)] } },
      });
    }
    const sample = SAMPLE_FILE.exec(path.basename(missing));
    if (sample) {
      actions.push({
        title: `Prepare the sample data (Debian's fortunes corpus, ${sample[1]} tokenizer) in ${path.relative(base, path.dirname(missing)) || '.'}`,
        kind: CodeActionKind.QuickFix,
        diagnostics: [d],
        command: {
          title: 'Prepare the sample data',
          command: PREPARE_SAMPLE_DATA_COMMAND,
          arguments: [{ out: path.dirname(missing), tokenizer: sample[1] }],
        },
      });
    }
  }
  return actions;
}

/** The token files under `base` whose paths are closest to the missing one, best first. */
export function closestTokenFiles(base: string, missing: string): string[] {
  const files = tokenFilesUnder(base);
  const want = path.basename(missing).toLowerCase();
  const wantDir = path.dirname(missing);
  const scored = files
    .map((file) => ({
      file,
      d: editDistance(path.basename(file).toLowerCase(), want) + (path.dirname(file) === wantDir ? 0 : 0.5),
    }))
    // A suggestion should look like what was meant: a typo or two, or the same name elsewhere.
    .filter((s) => s.d <= Math.max(2, Math.floor(want.length / 5)));
  scored.sort((a, b) => a.d - b.d || a.file.localeCompare(b.file));
  return scored.slice(0, SUGGESTIONS).map((s) => s.file);
}

function tokenFilesUnder(base: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (found.length >= MAX_FILES) return;
      if (e.isDirectory() && depth < SEARCH_DEPTH && !SKIP_DIRS.has(e.name) && !e.name.startsWith('.'))
        walk(path.join(dir, e.name), depth + 1);
      else if ((e.isFile() || e.isSymbolicLink()) && e.name.endsWith('.tok')) found.push(path.join(dir, e.name));
    }
  };
  walk(base, 0);
  return found;
}

/** Levenshtein distance: typos, a letter too many or too few. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row.push(Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length];
}
