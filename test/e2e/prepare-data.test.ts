// "FSDP: Prepare training data…" in a real VS Code (issue 35, "your own text"): a person picks their
// text and their model's tokenizer in the editor's own file dialogs, the preparation runs with a
// progress notification, and the run config it offers trains on the result — its vocabulary the
// tokenizer's, its data the files just made.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeTokenFile } from '../../core/data/token-file';
import { untilValue } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Tokenizer, BPE, byteLevelPreTokenizer } = require('tokenizers') as {
  Tokenizer: new (model: unknown) => {
    setPreTokenizer(p: unknown): void;
    train(files: string[]): void;
    addSpecialTokens(tokens: string[]): void;
    save(file: string): void;
  };
  BPE: { empty(): unknown };
  byteLevelPreTokenizer(): unknown;
};

describe('e2e: preparing your own text in a real VS Code', function () {
  this.timeout(300_000);
  let vscode: VsCodeSession;
  let workspace: string;
  let text: string;
  let tokenizerJson: string;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-prepare-'));
    text = path.join(workspace, 'my-notes.txt');
    writeFileSync(text, readFileSync('/usr/share/games/fortunes/computers'));
    const model = path.join(workspace, 'my-model');
    mkdirSync(model);
    const tok = new Tokenizer(BPE.empty());
    tok.setPreTokenizer(byteLevelPreTokenizer());
    tok.train([text]);
    tok.addSpecialTokens(['<|endoftext|>']);
    tokenizerJson = path.join(model, 'tokenizer.json');
    tok.save(tokenizerJson);
    writeFileSync(path.join(model, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|endoftext|>' }));
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('picks the text and the tokenizer, prepares the token files, and opens a run config that uses them', async () => {
    await vscode.runCommand('FSDP: Prepare training data…');
    // The editor's own open dialogs (a path typed into the simple file dialog, as a person can).
    await vscode.typeIntoQuickInput(text, { title: /your text/, fileDialog: true });
    await vscode.typeIntoQuickInput(tokenizerJson, { title: /your model's folder/, fileDialog: true });
    const out = path.join(workspace, 'data', 'my-notes');
    const outBox = vscode.page.locator('.quick-input-widget input');
    await untilValue(
      'the output folder proposed',
      () => outBox.inputValue().catch(() => ''),
      (v) => v === out,
      30_000,
    );
    await outBox.press('Enter');
    const ready = await vscode.waitForNotification(/Training data ready/, 120_000);
    assert.match(ready, /[\d,]+ training tokens, [\d,]+ validation tokens \(my-model, vocabulary \d+\)/);
    const train = decodeTokenFile(readFileSync(path.join(out, 'train.tok')));
    const stats = JSON.parse(readFileSync(path.join(out, 'stats.json'), 'utf8'));
    assert.equal(train.header.tokenCount, stats.train.tokens);
    assert.equal(train.header.vocabSize, stats.vocab_size);
    await vscode.page
      .locator('.notifications-toasts .notification-toast', { hasText: /Training data ready/ })
      .getByRole('button', { name: 'Create a run config' })
      .click();
    const config = path.join(workspace, 'my-notes.yaml');
    const yaml = await untilValue(
      'the offered run config written and opened',
      async () => (existsSync(config) ? readFileSync(config, 'utf8') : ''),
      (t) => t.includes('vocab_size'),
      30_000,
    );
    assert.match(yaml, new RegExp(`vocab_size: ${stats.vocab_size}\\b`));
    assert.match(yaml, /train: \.\/data\/my-notes\/train\.tok/);
    assert.equal(yaml.includes('val: ./data/my-notes/val.tok'), stats.val.file === 'val.tok');
    await untilValue(
      'the config open in the editor',
      () => vscode.editorText(),
      (t) => t.includes('vocab_size'),
      30_000,
    );
    await vscode.screenshot('prepare-training-data');
    assert.deepEqual(
      readdirSync(out).filter((f) => f.startsWith('.')),
      [],
      'no temporary file left in the output folder',
    );
  });
});
