// A run's life in a real VS Code, as a new user meets it (issue 18): "Launch" only on run configs;
// a refused launch that goes to the problem and a quick fix for a missing data file; a progress
// notification until the first step; a trainer killed by signal 9 shown as failed everywhere
// (toast with Open log / Resume, runs view, status bar, dashboard) with the memory hint; one toast
// for a NaN; a completed run continued for N more steps; Stop not shown as an error; runs of one
// name told apart; rename and delete from the runs view. The tests share one session and run in
// order (the last one meets the "long" run the signal-9 test left, to tell two of that name apart).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { LocalMachine } from '../../runs/machines/local-machine';
import { repoRoot } from '../../scripts/code-server';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';
import { startingManifest, underOwner } from '../harness/run-owner-argv';
import { runtimeAmong } from '../native/train-runs';

const SAMPLE_DATA = path.join(repoRoot, 'samples', 'data');

interface Header {
  runId: string;
  name: string;
  status: string;
  step?: number;
  reason?: string;
  etaSeconds?: number;
  connection: { state: string };
}

/** A run config of a small model over the sample data: seconds per run. */
function runConfig(name: string, training: Record<string, unknown>, data = 'data/fortunes-byte-train.tok'): string {
  return stringify({
    name,
    model: { d_model: 32, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32 },
    data: { train: data, seq_len: 32 },
    training: { batch_size_per_gpu: 4, learning_rate: 0.003, warmup_steps: 2, seed: 7, ...training },
    checkpointing: { save_every_n_steps: 0, save_final: true },
    logging: { eval_every_n_steps: 0 },
    launch: { target: 'local', device: 'cpu', nproc_per_node: 1, threads_per_rank: 1 },
  });
}

function manifestOf(runDir: string): RunManifest {
  return JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as RunManifest;
}

describe("e2e: a run's life — launch, failure, continue, rename, delete", function () {
  this.timeout(10 * 60_000);
  let workspace: string;
  let vscode: VsCodeSession;
  const local = new LocalMachine();

  const header = (name: string) =>
    vscode.inWebview<Header>(
      `window.fsdpDashboard?.header()?.name === ${JSON.stringify(name)} ? window.fsdpDashboard.header() : undefined`,
      60_000,
    );
  const runDirOf = (runId: string) => path.join(workspace, 'runs', runId);
  const toasts = (text: RegExp) => vscode.page.locator('.notifications-toasts .notification-toast', { hasText: text });
  const treeRow = (label: string | RegExp) => vscode.page.locator('.pane-body .monaco-list-row', { hasText: label });
  /**
   * Chooses `item` from a row's context menu until `opened` (what the item opens) shows: the runs
   * view refreshes its rows as runs change, which can close a menu under the pointer.
   */
  const fromContextMenu = async (row: ReturnType<typeof treeRow>, item: string, opened: string) => {
    for (let attempt = 1; ; attempt++) {
      await row.click({ button: 'right' });
      const menu = vscode.page.locator('.context-view .monaco-menu');
      // A refresh can also close the menu before it shows: open it again (CI, loaded machine).
      const shown = await menu
        .locator('.action-label', { hasText: item })
        .first()
        .waitFor({ timeout: 10_000 })
        .then(
          () => true,
          () => false,
        );
      if (!shown) {
        if (attempt === 3) throw new Error(`the context menu never showed "${item}"`);
        await vscode.page.keyboard.press('Escape');
        continue;
      }
      // Chosen with the keyboard, as applyQuickFix does: the menu's overlay can swallow clicks.
      for (let i = 0; i < 12; i++) {
        await vscode.page.keyboard.press('ArrowDown');
        const focused = await menu
          .locator('.action-item.focused .action-label')
          .first()
          .textContent()
          .catch(() => '');
        if (focused?.trim() === item) break;
      }
      await vscode.page.keyboard.press('Enter');
      if (
        await vscode.page
          .locator(opened)
          .first()
          .waitFor({ timeout: 5000 })
          .then(
            () => true,
            () => false,
          )
      )
        return;
      if (attempt === 3) throw new Error(`the context menu's "${item}" did not open ${opened}`);
      await vscode.page.keyboard.press('Escape');
    }
  };

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-life-'));
    mkdirSync(path.join(workspace, 'data'));
    for (const f of ['fortunes-byte-train.tok', 'fortunes-byte-val.tok'])
      symlinkSync(path.join(SAMPLE_DATA, f), path.join(workspace, 'data', f));
    writeFileSync(path.join(workspace, 'long.fsdp.yaml'), runConfig('long', { max_steps: 100_000 }));
    writeFileSync(path.join(workspace, 'quick.fsdp.yaml'), runConfig('quick', { max_steps: 12 }));
    writeFileSync(
      path.join(workspace, 'typo.fsdp.yaml'),
      runConfig('typo', { max_steps: 12 }, 'data/fortunes-byte-trian.tok'),
    );
    writeFileSync(
      path.join(workspace, 'fresh.fsdp.yaml'),
      runConfig('fresh', { max_steps: 12 }, 'prepared/fortunes-byte-train.tok'),
    );
    writeFileSync(
      path.join(workspace, 'accelerate_config.yaml'),
      'compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nmixed_precision: bf16\n',
    );
    writeFileSync(path.join(workspace, 'notes.yaml'), 'todo:\n  - write the report\n');
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    const runs = path.join(workspace, 'runs');
    for (const dir of existsSync(runs) ? await local.listRunDirs(runs) : []) {
      const pgid = manifestOf(dir).pgid;
      if (pgid) await local.signal(pgid, 'SIGKILL');
    }
    rmSync(workspace, { recursive: true, force: true });
  });

  it('offers Launch (title button and CodeLens) on run configs only, not on an accelerate config or other YAML', async () => {
    const launchButton = vscode.page.locator('.editor-actions .action-label[aria-label^="Launch FSDP run"]');
    const launchLens = vscode.page.locator('.editor-instance .codelens-decoration a', { hasText: 'Launch' });
    for (const file of ['notes.yaml', 'accelerate_config.yaml']) {
      await vscode.openFile(file);
      await vscode.page.waitForTimeout(1500); // the context key and CodeLens settle
      assert.equal(await launchButton.count(), 0, `no Launch button on ${file}`);
      assert.equal(await launchLens.count(), 0, `no Launch CodeLens on ${file}`);
    }
    await vscode.screenshot('lifecycle-no-launch-on-accelerate');
    await vscode.openFile('quick.fsdp.yaml');
    await launchButton.first().waitFor({ timeout: 20_000 });
    await launchLens.first().waitFor({ timeout: 20_000 });
  });

  it('a launch refused for a missing data file goes to the problem, and the quick fix "Change to …" repairs it', async () => {
    await vscode.openFile('typo.fsdp.yaml');
    await vscode.page.locator('.editor-instance .codelens-decoration a', { hasText: 'Launch' }).first().click();
    const message = await vscode.waitForNotification(/Cannot launch typo\.fsdp\.yaml: data\.train/, 30_000);
    assert.match(message, /fortunes-byte-trian\.tok/);
    await toasts(/Cannot launch typo/)
      .first()
      .locator('.monaco-button', { hasText: 'Go to problem' })
      .click();
    // The cursor goes to the value of data.train: the status bar shows its line and the selection.
    const line =
      readFileSync(path.join(workspace, 'typo.fsdp.yaml'), 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('fortunes-byte-trian')) + 1;
    await until(
      'the cursor on data.train',
      () => vscode.page.locator('.statusbar').innerText(),
      (t) => new RegExp(`Ln ${line}, Col \\d+ \\(\\d+ selected\\)`).test(t),
      20_000,
    );
    await vscode.applyQuickFix('Change to data/fortunes-byte-train.tok');
    await vscode.page.waitForFunction(
      () => document.querySelectorAll('.editor-instance .squiggly-error').length === 0,
      undefined,
      { timeout: 30_000 },
    );
    assert.match(await vscode.editorText(), /train: data\/fortunes-byte-train\.tok/);
    await vscode.screenshot('lifecycle-data-file-fixed');
    await vscode.page.keyboard.press('Control+S');
  });

  it('a sample data file never prepared: the quick fix "Prepare the sample data" makes it, with progress', async () => {
    await vscode.openFile('fresh.fsdp.yaml');
    await vscode.squiggles('error').first().waitFor({ timeout: 30_000 });
    assert.match(await vscode.nextProblem(), /prepared\/fortunes-byte-train\.tok/);
    await vscode.page.keyboard.press('Escape');
    await vscode.applyQuickFix("Prepare the sample data (Debian's fortunes corpus, byte tokenizer) in prepared");
    await vscode.waitForNotification(/Sample data ready/, 120_000);
    assert.ok(existsSync(path.join(workspace, 'prepared', 'fortunes-byte-train.tok')));
    // The runtime's check reads the file again on the next analysis.
    await vscode.page.keyboard.type(' ');
    await vscode.page.waitForFunction(
      () => document.querySelectorAll('.editor-instance .squiggly-error').length === 0,
      undefined,
      { timeout: 30_000 },
    );
  });

  it('shows progress until the first step; a runtime killed by signal 9 is failed everywhere, with the memory hint and Open log', async () => {
    await vscode.openFile('long.fsdp.yaml');
    await vscode.page.locator('.editor-instance .codelens-decoration a', { hasText: 'Launch' }).first().click();
    await vscode.waitForNotification(/Starting long/, 30_000);
    const live = await until(
      'the first steps',
      () => header('long'),
      (h) => (h.step ?? 0) >= 3,
      120_000,
    );
    await until(
      'the start notification to close',
      () => toasts(/Starting long/).count(),
      (n) => n === 0,
      30_000,
    );
    const runDir = runDirOf(live.runId);
    // The runtime among what run.json names (its supervisor leads; fsdp-train; the runtime), which
    // the supervisor writes a poll after the runtime's first events.
    const runtime = await until(
      "run.json to name the runtime's pid",
      async () => runtimeAmong(manifestOf(runDir).pids ?? []),
      (pid) => pid !== undefined,
      10_000,
    );
    assert.ok(runtime);
    process.kill(runtime, 'SIGKILL'); // as the kernel's out-of-memory killer would, but with memory to spare

    const text = await vscode.waitForNotification(/long failed:/, 60_000);
    assert.match(text, /signal 9 \(SIGKILL\)/);
    // The memory hint weighs the evidence: a tiny plan on a big machine was not out of memory
    // (core/runs/run-end.ts; the "near" case is test/unit/run-end.test.ts).
    assert.match(text, /not for want of memory \(the memory plan needs .*; the machine has \d/);
    assert.doesNotMatch(text, /may have run out of memory/);
    const toast = toasts(/long failed:/).first();
    for (const action of ['Open log', 'Resume'])
      assert.equal(await toast.locator('.monaco-button', { hasText: action }).count(), 1, `the toast offers ${action}`);

    const failed = await until(
      'the dashboard to say failed',
      () => header('long'),
      (h) => h.status === 'failed',
      30_000,
    );
    assert.match(failed.reason ?? '', /signal 9/);
    assert.notEqual(failed.connection.state, 'live', 'a dead run is not "live"');
    assert.equal(failed.etaSeconds, undefined, 'no ETA for a dead run');
    await until(
      'the status bar to say failed',
      () => vscode.page.locator('.statusbar').innerText(),
      (t) => /long: failed/.test(t),
      10_000,
    );
    await vscode.runCommand('FSDP Studio: Focus on Runs View');
    const row = treeRow(/^long/);
    await row.first().waitFor({ timeout: 30_000 });
    assert.match(await row.first().innerText(), /failed/);
    await vscode.screenshot('lifecycle-killed-by-signal-9');

    await toast.locator('.monaco-button', { hasText: 'Open log' }).click();
    await vscode.page.locator('.tabs-container .tab[aria-label*="stderr.log"]').first().waitFor({ timeout: 30_000 });
  });

  it('a checkpoint save that takes seconds shows a progress notification until it is saved', async () => {
    const runDir = runDirOf('slow-save');
    const argv = [
      process.execPath,
      '--import',
      'tsx',
      path.join(repoRoot, 'test', 'harness', 'synthetic-run.ts'),
      '--run-dir',
      runDir,
      '--steps',
      '400',
      '--rate',
      '20',
      '--every-ckpt',
      '20',
      '--save-ms',
      '8000',
      '--rich',
    ];
    await local.start({
      runDir,
      argv: underOwner(runDir, argv, 'native'),
      cwd: repoRoot,
      manifest: startingManifest('slow-save'),
    });
    // As for nan-run below: a pick opened before the owner has written run.json does not list the run
    // (a fresh clone on the AMD EPYC missed it so, and the tests after it found the pick still open).
    await until(
      "slow-save's owner to name itself in run.json",
      async () => existsSync(path.join(runDir, 'run.json')) && (manifestOf(runDir).pids?.length ?? 0) > 0,
      (named) => named,
      60_000,
    );
    await vscode.runCommand('FSDP: Attach to run');
    await vscode.pickQuickItem('slow-save');
    await vscode.waitForNotification(/slow-save: saving the checkpoint of step 20/, 60_000);
    const checkpoints = () =>
      readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"type":"checkpoint"')).length;
    assert.equal(checkpoints(), 0, 'shown while the save is under way');
    await vscode.screenshot('lifecycle-checkpoint-progress');
    await until(
      'the save notification to close',
      () => toasts(/saving the checkpoint of step 20/).count(),
      (n) => n === 0,
      30_000,
    );
    assert.ok(checkpoints() >= 1, 'closed when the checkpoint was saved');
    assert.equal(manifestOf(runDir).status, 'running', 'not by the end of the run');
    await local.signal(manifestOf(runDir).pgid!, 'SIGTERM');
  });

  it('a NaN that stops a run raises one toast, not two', async () => {
    const runDir = runDirOf('nan-run');
    const argv = [
      process.execPath,
      '--import',
      'tsx',
      path.join(repoRoot, 'test', 'harness', 'synthetic-run.ts'),
      '--run-dir',
      runDir,
      '--steps',
      '200',
      '--rate',
      '50',
      '--nan-at',
      '30',
    ];
    await local.start({
      runDir,
      argv: underOwner(runDir, argv, 'native'),
      cwd: repoRoot,
      manifest: startingManifest('nan-run'),
    });
    // Attach lists the runs whose owner has written run.json: under load the supervisor takes a
    // while to start, and a pick opened before that does not list the run.
    await until(
      "nan-run's owner to name itself in run.json",
      async () => existsSync(path.join(runDir, 'run.json')) && (manifestOf(runDir).pids?.length ?? 0) > 0,
      (named) => named,
      60_000,
    );
    await vscode.runCommand('FSDP: Attach to run');
    await vscode.pickQuickItem('nan-run');
    await vscode.waitForNotification(/nan-run: NaN in forward/, 60_000);
    await until(
      'the run to end',
      async () => manifestOf(runDir).status,
      (st) => st === 'failed',
      30_000,
    );
    await vscode.page.waitForTimeout(3000); // a second toast would have come by now
    assert.equal(await toasts(/nan-run/).count(), 1, await vscode.notificationsText());
  });

  it('a completed run offers Continue training (not Resume) for N more steps; Stop is not an error; same-named runs are told apart; rename and delete', async () => {
    await vscode.openFile('quick.fsdp.yaml');
    await vscode.page.locator('.editor-instance .codelens-decoration a', { hasText: 'Launch' }).first().click();
    await vscode.waitForNotification(/quick completed at step 12/, 120_000);
    const done = await header('quick');
    assert.equal(done.status, 'completed');
    const runDir = runDirOf(done.runId);

    await vscode.runCommand('FSDP Studio: Focus on Runs View');
    const row = treeRow(/^quick/).first();
    await row.hover();
    assert.equal(
      await row.locator('.action-label[aria-label="Resume run"]').count(),
      0,
      'no Resume on a completed run',
    );
    await row.locator('.action-label[aria-label="Continue training…"]').click();
    await vscode.typeIntoQuickInput('8');
    await until(
      'the continued run to complete',
      () => header('quick'),
      (h) => h.status === 'completed' && h.step === 20,
      120_000,
    );
    assert.equal(manifestOf(runDir).status, 'completed');
    const steps = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"type":"step"'))
      .map((l) => (JSON.parse(l) as { step: number }).step);
    assert.deepEqual(
      [...new Set(steps)],
      Array.from({ length: 20 }, (_, i) => i + 1),
      'steps 13..20 continue from the checkpoint of step 12',
    );
    await vscode.screenshot('lifecycle-continued');

    // A second run of the same config: Stop from the dashboard reads as the person's stop.
    await vscode.openFile('long.fsdp.yaml');
    await vscode.page.locator('.editor-instance .codelens-decoration a', { hasText: 'Launch' }).first().click();
    const second = await until(
      'the second long run',
      () => header('long'),
      (h) => h.status === 'running' && (h.step ?? 0) >= 2,
      120_000,
    );
    // Two Stops at once (a double click on the button): one stop; the second is told it is already stopping.
    await (
      await vscode.webviewFrame(`window.fsdpDashboard?.header()?.runId === ${JSON.stringify(second.runId)}`)
    )
      .locator('#action-stop')
      .dblclick();
    await until(
      'the second Stop told the run is already stopping',
      () => vscode!.notificationsText(),
      (t) => /is already stopping/.test(t),
      30_000,
    );
    const stopped = await until(
      'the stop',
      () => header('long'),
      (h) => h.runId === second.runId && h.status === 'stopped',
      60_000,
    );
    assert.match(stopped.reason ?? '', /^stopped with Stop at step \d+$/);
    const reasonClass = await vscode.inWebview<string>(`document.getElementById('run-reason')?.className`);
    assert.notEqual(reasonClass, 'error', 'a stop the person asked for is not shown as an error');

    // Two runs named "long": each label carries its start time, the tooltip its id.
    await vscode.runCommand('FSDP Studio: Focus on Runs View');
    await until(
      'two labelled long runs',
      () => treeRow(/^long \(/).count(),
      (n) => n === 2,
      20_000,
    );
    await vscode.screenshot('lifecycle-twins-and-stop');

    // Rename the completed run, then delete it with its folder.
    await fromContextMenu(row, 'Rename run…', '.quick-input-widget input');
    // The menu's command gets its row, unless the tree re-rendered under the open menu (the other
    // run's updates): then it asks which run, "Rename run" (CI typed the new name into that list).
    const title = vscode.page.locator('.quick-input-widget .quick-input-title');
    if (/^Rename run$/.test(((await title.textContent().catch(() => '')) ?? '').trim()))
      await vscode.pickQuickItem(/^quick/);
    await title.filter({ hasText: /^Rename quick/ }).waitFor({ timeout: 20_000 });
    await vscode.typeIntoQuickInput('quick, continued');
    const renamed = treeRow(/^quick, continued/).first();
    await renamed.waitFor({ timeout: 20_000 });
    await fromContextMenu(renamed, 'Delete run…', '.monaco-dialog-box');
    await vscode.page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Delete run and folder' }).click();
    await until(
      'the run folder to be gone',
      async () => existsSync(runDir),
      (there) => !there,
      20_000,
    );
    await until(
      'the row to be gone',
      () => treeRow(/^quick, continued/).count(),
      (n) => n === 0,
      20_000,
    );
  });
});
