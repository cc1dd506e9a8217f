// Config checks in a real VS Code: a run config with a mistake gets its diagnostic from the
// language server, the quick fix applied from the editor's menu removes it; "FSDP: New run config"
// writes a commented config that passes the checks.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { VsCodeSession } from './harness/vscode-session';

// Runnable on this machine once fixed (CPU, one rank, the sample data), so the runtime's own check
// finds nothing either.
const BROKEN = `# A run config with a misspelled sharding strategy.
model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: data/fortunes-byte-train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
fsdp:
  sharding_strategy: NO_SHRAD
`;

describe('e2e: config checks (language server) in a real VS Code', function () {
  this.timeout(240_000);
  let vscode: VsCodeSession;
  let workspace: string;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-configs-'));
    writeFileSync(path.join(workspace, 'broken.fsdp.yaml'), BROKEN);
    symlinkSync(path.join(repoRoot, 'samples', 'data'), path.join(workspace, 'data'));
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('shows the misspelled value as an error and removes it with the quick fix from the editor', async () => {
    await vscode.openFile('broken.fsdp.yaml');
    await vscode.squiggles('error').first().waitFor({ timeout: 60_000 });
    assert.equal(await vscode.squiggles('warning').count(), 0, 'one problem, one squiggle');
    const message = await vscode.nextProblem();
    assert.match(message, /fsdp\.sharding_strategy: "NO_SHRAD" is not one of .*did you mean "NO_SHARD"\?/);
    await vscode.screenshot('config-checks-diagnostic');
    await vscode.page.keyboard.press('Escape');
    await vscode.applyQuickFix('Change to NO_SHARD');
    await vscode.page.waitForFunction(
      () => document.querySelectorAll('.editor-instance .squiggly-error').length === 0,
      undefined,
      { timeout: 30_000 },
    );
    assert.match(await vscode.editorText(), /^ {2}sharding_strategy: NO_SHARD$/m);
    await vscode.screenshot('config-checks-fixed');
    await vscode.page.keyboard.press('Control+S');
    const file = path.join(workspace, 'broken.fsdp.yaml');
    const fixed = BROKEN.replace('NO_SHRAD', 'NO_SHARD');
    for (let i = 0; i < 100 && readFileSync(file, 'utf8') !== fixed; i++) await vscode.page.waitForTimeout(200);
    assert.equal(
      readFileSync(file, 'utf8'),
      fixed,
      'the fix is one edit at the value; the rest of the file is as it was',
    );
  });

  it('"FSDP: New run config" writes a commented config for a model size and target that passes the checks', async () => {
    await vscode.runCommand('FSDP: New run config');
    await vscode.pickQuickItem('tiny');
    await vscode.pickQuickItem('CPU (this machine)');
    await vscode.pickQuickItem('1');
    const file = path.join(workspace, 'tiny-cpu.fsdp.yaml');
    await vscode.page
      .locator('.tabs-container .tab[aria-label*="tiny-cpu.fsdp.yaml"]')
      .first()
      .waitFor({ timeout: 30_000 });
    const text = readFileSync(file, 'utf8');
    assert.match(
      text,
      /^# tiny \(0\.8M, byte-level, trains on a CPU in a minute\) on 1 CPU rank, written by "FSDP: New run config"\.\n/,
    );
    assert.match(text, /\n {2}device: cpu\n {2}nproc_per_node: 1\n$/);
    await vscode.page.waitForTimeout(3000); // the server has checked it by now
    assert.equal(await vscode.squiggles('error').count(), 0);
    assert.equal(await vscode.squiggles('warning').count(), 0);
    await vscode.screenshot('config-checks-new-run-config');
  });
});
