import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { VsCodeSession } from './harness/vscode-session';

describe('e2e: the extension in a real VS Code (code-server + Chromium)', function () {
  this.timeout(180_000);
  let vscode: VsCodeSession;

  before(async () => {
    vscode = await VsCodeSession.open();
  });
  after(async () => {
    await vscode?.close();
  });

  it('lists the FSDP commands in the command palette', async () => {
    const entries = await vscode.paletteEntries('FSDP:');
    await vscode.screenshot('foundation-palette');
    await vscode.closePalette();
    for (const title of ['FSDP: Launch FSDP run', 'FSDP: Check environment']) {
      assert.ok(entries.some((e) => e.includes(title)), `palette lacks "${title}"; it shows: ${entries.join(' | ')}`);
    }
  });

  it('activates and runs a command end to end: Check environment reports the native runtime', async () => {
    await vscode.runCommand('FSDP: Check environment');
    const message = await vscode.waitForNotification(/Environment: \d+ of \d+ checks passed/);
    const file = await vscode.screenshot('foundation-check-environment');
    assert.ok(existsSync(file));
    const [, passed, total] = /(\d+) of (\d+)/.exec(message)!.map(Number);
    assert.ok(total >= 5, message);
    assert.equal(passed, total, `a check failed on a machine set up by npm test: ${message}`);
  });
});
