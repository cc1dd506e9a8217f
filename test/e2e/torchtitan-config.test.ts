// A torchtitan job config (TOML) in a real VS Code: torchtitan's own Llama 3 70B config with a
// misspelt key shows the error with its did-you-mean, the quick fix from the editor removes it, the
// per-GPU memory line appears above [parallelism], and the memory panel opened from it lists the
// splits of the GPUs that fit, fastest-looking first.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { untilValue } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

const ORIGINAL = readFileSync(path.join(repoRoot, 'test', 'fixtures', 'torchtitan', 'llama3-llama3_70b.toml'), 'utf8');
// 64 GPUs of 80 GB (the file's own note: "a preset for 64 A100 GPUs"), and a planted typo.
const BROKEN = `# fsdp-studio: nproc=8 nnodes=8 gpu=H100-80GB\n${ORIGINAL.replace('tensor_parallel_degree = 8', 'tensor_parallel_degre = 8')}`;

describe('e2e: a torchtitan TOML config in a real VS Code', function () {
  this.timeout(300_000);
  let vscode: VsCodeSession;
  let workspace: string;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-torchtitan-'));
    writeFileSync(path.join(workspace, 'llama3_70b.toml'), BROKEN);
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('shows the misspelt key with did-you-mean, fixes it, and shows the memory line', async () => {
    await vscode.openFile('llama3_70b.toml');
    // The misspelt key is just below the first screenful (the memory line above [parallelism] takes
    // a line), and Monaco draws only what is on screen: show the file's second half.
    await vscode.page.locator('.editor-instance .view-lines').first().click();
    await vscode.page.keyboard.press('Control+End');
    await vscode.squiggles('error').first().waitFor({ timeout: 60_000 });
    const message = await vscode.nextProblem();
    assert.match(
      message,
      /unknown key "tensor_parallel_degre" \(torchtitan 0\.2\.2 rejects it\); did you mean "tensor_parallel_degree"\?/,
    );
    await vscode.screenshot('torchtitan-diagnostic');
    await vscode.page.keyboard.press('Escape');
    await vscode.applyQuickFix('Rename to tensor_parallel_degree');
    await vscode.page.waitForFunction(
      () => document.querySelectorAll('.editor-instance .squiggly-error').length === 0,
      undefined,
      { timeout: 30_000 },
    );
    const lens = vscode.page
      .locator('.contentWidgets .codelens-decoration', { hasText: '≈' })
      .filter({ hasNotText: 'stale' })
      .first();
    // An unknown key does not make the estimate stale: the line first shows the typo's split (dp 64,
    // does not fit), then the fixed one.
    const text = await untilValue(
      'the memory line of the fixed config',
      () => lens.innerText({ timeout: 60_000 }),
      (t) => / — fits /.test(t),
      60_000,
    );
    assert.match(text, /^≈ [\d.]+ GiB \/ GPU .*— fits H100 80GB — Llama 3 70B/);
    await vscode.screenshot('torchtitan-memory-line');
  });

  it('opens the memory panel from the line: the degrees of the config, and the splits of 64 GPUs that fit', async () => {
    await vscode.page.locator('.contentWidgets .codelens-decoration a', { hasText: '≈' }).first().click();
    const web = vscode.webview();
    await web.locator('#verdict').waitFor({ timeout: 60_000 });
    assert.match(
      await web.locator('#scope').innerText(),
      /per GPU — 64 GPUs \(8 per node × 8\), dp 8 × tp 8\+sp, torchtitan/,
    );
    // torchtitan has no sharding strategy and its GPUs follow the degrees: those two controls are hidden.
    assert.equal(await web.locator('#strategy').isVisible(), false, 'Sharding is hidden');
    assert.equal(await web.locator('#nproc').isVisible(), false, 'GPUs per node is hidden');
    await web.locator('#app[data-comparisons="done"]').waitFor({ timeout: 120_000 });
    const rows = web.locator('#nd-table tbody tr');
    assert.ok((await rows.count()) >= 3, 'several splits listed');
    assert.match((await rows.first().getAttribute('class')) ?? '', /fits/, 'the first listed fits');
    assert.match(await web.locator('#nd-fewest-gpus').innerText(), /^Fewest GPUs with any degrees: \d+ \(dp /);
    assert.match(await web.locator('#nd-largest-batch').innerText(), /^Largest micro-batch with these degrees: \d+\.$/);
    await vscode.screenshot('torchtitan-memory-panel');
    // Picking another split re-estimates it in the panel and offers to write its degrees.
    const other = web.locator('#nd-table tbody tr:not(.current)').first();
    const split = (await other.getAttribute('data-split'))!;
    await other.locator('th').click();
    await web.locator('#nd-table tbody tr.current', { hasText: split }).waitFor({ timeout: 30_000 });
    await web.locator('#pending vscode-button[data-knob="parallel"]').waitFor({ timeout: 10_000 });
  });
});
