// torchtitan 0.3's Python configurations in a real VS Code, with the real torchtitan 0.3.0 of the
// project's .venv: a person's module of functions returning Trainer.Config shows, above each, its
// per-GPU memory on the GPU of fsdp.estimator.gpu (computed by running the function in the Python a
// launch spec's python: names), or why there is none (the function raised); clicking a figure opens
// the memory panel for that function's config; in an untrusted workspace the lens asks for trust and
// runs nothing.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { VENV_PYTHON } from '../harness/pytorch';
import { untilValue } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

const MY_CONFIGS = path.join(repoRoot, 'test', 'fixtures', 'torchtitan', 'python', 'my_configs.py');
/** The text of the first lens containing `hasText`, once one is drawn with text. */
const lensText = (vscode: VsCodeSession, hasText: string, timeoutMs: number) =>
  untilValue(
    `a lens with "${hasText}"`,
    () =>
      vscode.page
        .locator('.contentWidgets .codelens-decoration', { hasText })
        .first()
        .innerText({ timeout: 1_000 })
        .catch(() => ''),
    (t) => t.length > 0,
    timeoutMs,
  );

describe('e2e: a torchtitan 0.3 Python config in a real VS Code', function () {
  // The lens waits for torchtitan's import and each config's call (tens of seconds on a loaded machine).
  this.timeout(600_000);
  let vscode: VsCodeSession | undefined;
  let workspace: string;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-titan-py-'));
    copyFileSync(MY_CONFIGS, path.join(workspace, 'my_configs.py'));
    // The launch spec that would run it names the Python (the Python extension is not installed here).
    writeFileSync(
      path.join(workspace, 'titan.fsdp-launch.yaml'),
      [
        'name: titan',
        'command: python -m torchtitan.train --module my_configs --config llama3_8b_fsdp8',
        `python: ${JSON.stringify(VENV_PYTHON)}`,
        '',
      ].join('\n'),
    );
    vscode = await VsCodeSession.open({ workspace, settings: { 'fsdp.estimator.gpu': 'H100-80GB' } });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it("shows each config's per-GPU memory above its function, and why the one that raises has none", async () => {
    await vscode!.openFile('my_configs.py');
    const figure = await lensText(vscode!, '≈', 480_000);
    assert.match(figure, /^≈ [\d.]+ GiB \/ GPU — fits H100 80GB — torchtitan llama3 8B$/);
    const why = await lensText(vscode!, 'no estimate', 30_000);
    assert.match(
      why,
      /^no estimate: AttributeError: 'ParallelismConfig' object has no attribute 'tensor_parallel_degre' \(at my_configs\.py:24\)$/,
    );
    await vscode!.screenshot('torchtitan-python-lens');
  });

  it("opens the memory panel for the function's config from its figure, with the figure the lens shows", async () => {
    const figure = await lensText(vscode!, '≈', 60_000);
    await vscode!.page.locator('.contentWidgets .codelens-decoration a', { hasText: '≈' }).first().click();
    const web = vscode!.webview();
    await web.locator('#verdict').waitFor({ timeout: 60_000 });
    assert.match(await web.locator('#title').innerText(), /^Memory estimator — my_configs\.py: llama3_8b_fsdp8\(\)/);
    // llama3_8b_fsdp8 sets data_parallel_shard_degree 8: FSDP over 8 GPUs, nothing else.
    assert.match(await web.locator('#scope').innerText(), /^per GPU — 8 GPUs, .*dp 8.*, torchtitan$/);
    // The panel estimates the same input the lens did: its figure is the lens's.
    const gib = /^≈ ([\d.]+) GiB/.exec(figure)![1];
    const summary = await web.locator('#summary').innerText();
    assert.ok(summary.startsWith(`≈ ${gib} GiB / GPU`), `${figure} → ${summary}`);
    await vscode!.screenshot('torchtitan-python-panel');
  });
});

describe('e2e: a torchtitan 0.3 Python config in an untrusted workspace', function () {
  this.timeout(300_000);
  let vscode: VsCodeSession | undefined;
  let dir: string;
  let marker: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-titan-untrusted-'));
    const ws = path.join(dir, 'workspace');
    marker = path.join(dir, 'python-ran');
    mkdirSync(ws);
    copyFileSync(MY_CONFIGS, path.join(ws, 'my_configs.py'));
    // A Python that leaves a marker: the lens must not run it until the workspace is trusted.
    const python = path.join(ws, 'python.sh');
    writeFileSync(python, `#!/bin/sh\necho "$0 $*" >> '${marker}'\n`);
    chmodSync(python, 0o755);
    writeFileSync(path.join(ws, 'titan.fsdp-launch.yaml'), 'name: titan\npython: ./python.sh\ncommand: python x.py\n');
    vscode = await VsCodeSession.open({ workspace: ws, untrusted: true });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says the estimate needs a trusted workspace and runs nothing', async () => {
    await vscode!.openFile('my_configs.py');
    const said = await lensText(vscode!, 'trusted', 120_000);
    assert.equal(said, 'memory: needs a trusted workspace (the estimate runs this config)');
    assert.equal(existsSync(marker), false, 'the Python the workspace names did not run');
  });
});
