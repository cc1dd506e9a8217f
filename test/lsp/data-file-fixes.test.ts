// A run config whose data file does not exist gets quick fixes: the closest token files near it
// ("did you mean …"), and, for a file samples/prepare-data.ts writes, "Prepare the sample data".
// The real language server over stdio with the native runtime's own check (which reports the file).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TextEdit, WorkspaceEdit } from 'vscode-languageserver-protocol';
import { closestTokenFiles, editDistance } from '../../language-server/features/data-file-fixes';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';

const SAMPLE_DATA = path.join(repoRoot, 'samples', 'data');

function config(train: string, val: string): string {
  return `model: {d_model: 32, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32}
data:
  train: ${train}
  val: ${val}
  seq_len: 32
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
`;
}

/** Applies LSP text edits (non-overlapping) to a text. */
function applyEdits(text: string, edits: TextEdit[]): string {
  const offset = (p: { line: number; character: number }) =>
    text
      .split('\n')
      .slice(0, p.line)
      .reduce((n, l) => n + l.length + 1, 0) + p.character;
  return [...edits]
    .sort((a, b) => offset(b.range.start) - offset(a.range.start))
    .reduce((t, e) => t.slice(0, offset(e.range.start)) + e.newText + t.slice(offset(e.range.end)), text);
}

function editsOf(edit: WorkspaceEdit | undefined, uri: string): TextEdit[] {
  return edit?.changes?.[uri] ?? [];
}

describe('language server: quick fixes for a missing data file', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;
  let tmp: string;

  before(async () => {
    server = await LanguageServerClient.start();
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-datafix-'));
    mkdirSync(path.join(tmp, 'data'));
    for (const f of ['fortunes-byte-train.tok', 'fortunes-byte-val.tok'])
      symlinkSync(path.join(SAMPLE_DATA, f), path.join(tmp, 'data', f));
  });
  after(async () => {
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('a misspelt data.train: "Change to data/fortunes-byte-train.tok", preferred, which edits just that value', async () => {
    const file = path.join(tmp, 'typo.fsdp.yaml');
    const uri = pathToFileURL(file).href;
    const diagnostics = await server.open(uri, config('data/fortunes-byte-trian.tok', 'data/fortunes-byte-val.tok'));
    const missing = diagnostics.find((d) => d.range.start.line === 2);
    assert.ok(missing, `a diagnostic on data.train: ${JSON.stringify(diagnostics.map((d) => d.message))}`);
    assert.match(String(missing.message), /fortunes-byte-trian\.tok/);
    const actions = await server.codeActions(uri, missing.range, [missing]);
    const change = actions.find((a) => a.title === 'Change to data/fortunes-byte-train.tok');
    assert.ok(change, actions.map((a) => a.title).join(' | '));
    assert.equal(change.isPreferred, true);
    const text = config('data/fortunes-byte-trian.tok', 'data/fortunes-byte-val.tok');
    assert.equal(
      applyEdits(text, editsOf(change.edit, uri)),
      config('data/fortunes-byte-train.tok', 'data/fortunes-byte-val.tok'),
    );
    assert.equal(actions[0], change, 'the closest name comes first');
  });

  it('a sample file that was never prepared: "Prepare the sample data" runs the extension\'s command for its folder and tokenizer', async () => {
    const file = path.join(tmp, 'fresh.fsdp.yaml');
    const uri = pathToFileURL(file).href;
    const diagnostics = await server.open(
      uri,
      config('data/fortunes-byte-train.tok', 'prepared/fortunes-gpt2-val.tok'),
    );
    const missing = diagnostics.find((d) => d.range.start.line === 3);
    assert.ok(missing, `a diagnostic on data.val: ${JSON.stringify(diagnostics.map((d) => d.message))}`);
    const actions = await server.codeActions(uri, missing.range, [missing]);
    const prepare = actions.find((a) => a.title.startsWith('Prepare the sample data'));
    assert.ok(prepare, actions.map((a) => a.title).join(' | '));
    assert.equal(prepare.command?.command, 'fsdp.prepareSampleData');
    assert.deepEqual(prepare.command?.arguments, [{ out: path.join(tmp, 'prepared'), tokenizer: 'gpt2' }]);
  });

  it('ranks by name distance and offers nothing that does not look like what was meant', () => {
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.deepEqual(
      closestTokenFiles(tmp, path.join(tmp, 'data', 'fortunes-byte-val.tk')).map((f) => path.relative(tmp, f)),
      ['data/fortunes-byte-val.tok'],
    );
    assert.deepEqual(closestTokenFiles(tmp, path.join(tmp, 'data', 'wikitext-103.tok')), []);
  });
});
