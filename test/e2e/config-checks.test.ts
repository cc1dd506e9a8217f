// Config checks in a real VS Code: a run config with a mistake gets its diagnostic from the
// language server, the quick fix applied from the editor's menu removes it; "FSDP: New run config"
// writes a commented config that passes the checks.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { VsCodeSession } from './harness/vscode-session';

const BROKEN = `# A run config with a misspelled sharding strategy.
model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: data/train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
fsdp:
  sharding_strategy: FULL_SHRAD
launch:
  nproc_per_node: 2
`;

describe('e2e: config checks (language server) in a real VS Code', function () {
  this.timeout(240_000);
  let vscode: VsCodeSession;
  let workspace: string;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-configs-'));
    writeFileSync(path.join(workspace, 'broken.fsdp.yaml'), BROKEN);
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed') await vscode?.screenshot(`config-checks-failed-${this.currentTest.title.slice(0, 30).replace(/\W+/g, '-')}`);
  });
  after(async () => {
    await vscode?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('shows the misspelled value as an error and removes it with the quick fix from the editor', async () => {
    await vscode.openFile('broken.fsdp.yaml');
    await vscode.squiggles('error').first().waitFor({ timeout: 60_000 });
    const message = await vscode.nextProblem();
    assert.match(message, /fsdp\.sharding_strategy: "FULL_SHRAD" is not one of .*did you mean "FULL_SHARD"\?/);
    await vscode.screenshot('config-checks-diagnostic');
    await vscode.applyQuickFix('Change to FULL_SHARD');
    await vscode.page.waitForFunction(() => document.querySelectorAll('.editor-instance .squiggly-error').length === 0, undefined, { timeout: 30_000 });
    assert.match(await vscode.editorText(), /sharding_strategy: FULL_SHARD\n/);
    await vscode.screenshot('config-checks-fixed');
    await vscode.page.keyboard.press('Control+S');
    await vscode.page.waitForFunction(() => !document.querySelector('.tabs-container .tab.dirty'), undefined, { timeout: 20_000 });
    assert.equal(readFileSync(path.join(workspace, 'broken.fsdp.yaml'), 'utf8'), BROKEN.replace('FULL_SHRAD', 'FULL_SHARD'));
  });

  it('"FSDP: New run config" writes a commented config for a model size and GPU that passes the checks', async () => {
    await vscode.runCommand('FSDP: New run config');
    await vscode.pickQuickItem('GPT-2 124M');
    await vscode.pickQuickItem('H100 80GB');
    await vscode.pickQuickItem('8');
    const file = path.join(workspace, 'gpt2-124m-h100-80gb.fsdp.yaml');
    await vscode.page.locator('.tabs-container .tab[aria-label*="gpt2-124m-h100-80gb.fsdp.yaml"]').first().waitFor({ timeout: 30_000 });
    const text = readFileSync(file, 'utf8');
    assert.match(text, /^# GPT-2 124M on 8 × H100 80GB, written by "FSDP: New run config"\.\n# estimated peak [\d.]+ GiB per GPU of 79\.6 GiB/);
    assert.match(text, /\n {2}gpu: H100-80GB\n$/);
    await vscode.page.waitForTimeout(3000); // the server has checked it by now
    assert.equal(await vscode.squiggles('error').count(), 0);
    assert.equal(await vscode.squiggles('warning').count(), 0);
    await vscode.screenshot('config-checks-new-run-config');
  });
});
