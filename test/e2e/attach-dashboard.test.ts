// Attach and watch in a real VS Code: a run that is already writing its run folder (test data from
// the synthetic writer; the launch tests run the real trainer) is attached from the palette; the
// dashboard's loss chart fills; a window reload mid-run brings the whole history back with no gap
// and no double; a planted NaN shows in the diagnostics view with its layer; finished runs are
// compared (every metric, raw and smoothed, the config values that differ, one tab per set), and
// the comparison is restored after a reload.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalMachine } from '../../runs/machines/local-machine';
import { repoRoot } from '../../scripts/code-server';
import { syntheticLoss } from '../harness/synthetic-run';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';
import { startingManifest, underOwner } from '../harness/run-owner-argv';

interface ChartPoints {
  x: number[];
  series: Array<{ label: string; y: Array<number | null> }>;
}

/** The loss points the dashboard draws right now, read from its webview. */
function lossPoints(vscode: VsCodeSession): Promise<ChartPoints> {
  return vscode.inWebview<ChartPoints>(`window.fsdpDashboard?.points('loss')`);
}

async function waitForPoints(vscode: VsCodeSession, atLeast: number, timeoutMs = 60_000): Promise<ChartPoints> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const p = await lossPoints(vscode);
    if (p.x.length >= atLeast) return p;
    if (Date.now() > deadline) throw new Error(`the loss chart has ${p.x.length} points, expected ${atLeast}`);
    await vscode.page.waitForTimeout(300);
  }
}

/** Steps 1..n, each once, each with the value the writer wrote. */
function assertExactHistory(p: ChartPoints, what: string): void {
  const n = p.x.length;
  assert.deepEqual(
    p.x,
    Array.from({ length: n }, (_, i) => i + 1),
    `${what}: steps are 1..${n} without gaps or doubles`,
  );
  const raw = p.series.find((s) => s.label === 'loss')!;
  raw.y.forEach((v, i) =>
    assert.ok(Math.abs((v as number) - syntheticLoss(i + 1)) < 1e-9, `${what}: loss of step ${i + 1} is ${v}`),
  );
}

describe('e2e: attach to a run, watch it, reload mid-run, diagnose a NaN', function () {
  this.timeout(300_000);
  let workspace: string;
  let vscode: VsCodeSession | undefined;
  const local = new LocalMachine();
  const started: number[] = [];

  before(() => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-ws-'));
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    for (const pgid of started) await local.signal(pgid, 'SIGKILL');
    rmSync(workspace, { recursive: true, force: true });
  });

  async function startSynthetic(runId: string, args: string[]): Promise<string> {
    const runDir = path.join(workspace, 'runs', runId);
    const argv = [
      process.execPath,
      '--import',
      'tsx',
      path.join(repoRoot, 'test', 'harness', 'synthetic-run.ts'),
      '--run-dir',
      runDir,
      ...args,
    ];
    const run = await local.start({
      runDir,
      argv: underOwner(runDir, argv, 'native'),
      cwd: repoRoot,
      manifest: startingManifest(runId),
    });
    started.push(run.pgid);
    return runDir;
  }

  it('attaches from the palette, fills the loss chart live, and after a reload shows the whole history once', async () => {
    // Long enough to be still running after a slow reload on a loaded machine; killed in after().
    await startSynthetic('live-run', ['--steps', '5000', '--rate', '12']);
    vscode = await VsCodeSession.open({ workspace });
    await vscode.runCommand('FSDP: Attach to run');
    await vscode.pickQuickItem('live-run');
    const early = await waitForPoints(vscode, 20);
    assertExactHistory(early, 'while filling');
    const later = await waitForPoints(vscode, early.x.length + 15);
    assert.ok(later.x.length > early.x.length, 'the chart keeps filling as the run writes');
    await vscode.screenshot('watch-dashboard-live');

    await vscode.reload();
    const restored = await waitForPoints(vscode, later.x.length + 1, 90_000);
    assertExactHistory(restored, 'after the reload');
    const header = await vscode.inWebview<{ status: string }>('window.fsdpDashboard.header()');
    assert.equal(header.status, 'running');
    const followed = await waitForPoints(vscode, restored.x.length + 10);
    assertExactHistory(followed, 'following after the reload');
    await vscode.screenshot('watch-dashboard-after-reload');
  });

  it('shows a planted NaN in the NaN diagnostics view with its layer, phase and operation', async () => {
    await startSynthetic('nan-run', ['--steps', '200', '--rate', '50', '--nan-at', '40']);
    await vscode!.runCommand('FSDP: Attach to run');
    await vscode!.pickQuickItem('nan-run');
    await vscode!.waitForNotification(/NaN in forward, layer 1 \(attn\.softmax\)/, 60_000);
    // The dashboard's webview takes focus when it has loaded, which would close a quick pick opened
    // before that: wait for it first.
    await vscode!.inWebview<boolean>(`window.fsdpDashboard?.header()?.runId === 'nan-run' || undefined`, 60_000);
    await vscode!.runCommand('FSDP: Show NaN diagnostics');
    await vscode!.pickQuickItem('nan-run');
    const where = await vscode!.inWebview<Record<string, string>>(
      `document.getElementById('where-layer') ? Object.fromEntries(['layer', 'phase', 'op'].map((k) => [k, document.getElementById('where-' + k).textContent])) : undefined`,
      60_000,
    );
    assert.deepEqual(where, { layer: '1', phase: 'forward', op: 'attn.softmax' });
    await vscode!.screenshot('watch-nan-diagnostics');
  });

  it('compares two runs: loss, validation loss, lr, grad norm and throughput, the differing config values, one tab per set of runs, and the comparison survives a reload', async () => {
    const short = await startSynthetic('cmp-short', ['--steps', '40', '--rate', '0', '--eval-every', '10']);
    const long = await startSynthetic('cmp-long', [
      '--steps',
      '80',
      '--rate',
      '0',
      '--eval-every',
      '20',
      '--lr',
      '0.003',
    ]);
    const third = await startSynthetic('cmp-third', ['--steps', '30', '--rate', '0']);
    for (const dir of [short, long, third])
      await until(
        `${path.basename(dir)} to complete`,
        async () => (await local.readManifest(dir))?.status,
        (status) => status === 'completed',
        60_000,
      );
    vscode ??= await VsCodeSession.open({ workspace });
    // Whatever webview is still loading must not take the focus from the pick; and the pick
    // itself stays open when focus moves (ignoreFocusOut), so a late load cannot close it.
    await vscode.runCommand('FSDP: Compare runs');
    await vscode.pickQuickItem('cmp-short');
    // One run is not a comparison: the pick stays open and says so.
    await vscode.page.keyboard.press('Enter');
    await vscode.page
      .locator('.quick-input-widget input[placeholder="Pick at least two runs to compare"]')
      .waitFor({ timeout: 20_000 });
    await vscode.pickQuickItem('cmp-long');
    await vscode.page.keyboard.press('Enter');

    type Compared = Array<{ label: string; status: string }>;
    const compared = (n: number) =>
      until(
        'the comparison',
        () => vscode!.inWebview<Compared>('window.fsdpCompare?.runs()', 60_000),
        (r) => r.length === n && r.every((x) => x.status === 'completed'),
        60_000,
      );
    const runs = await compared(2);
    assert.deepEqual(runs.map((r) => r.label.split(' ')[0]).sort(), ['cmp-long', 'cmp-short']);
    const order = runs.map((r) => r.label.split(' ')[0]);

    type Chart = { id: string; title: string; series: string[] };
    const charts = await vscode.inWebview<Chart[]>('window.fsdpCompare?.charts()');
    assert.deepEqual(
      charts.map((c) => c.title),
      ['Loss', 'Validation loss', 'Learning rate', 'Gradient norm', 'Throughput'],
    );
    for (const c of charts) assert.deepEqual(c.series, order, `${c.title}: a line per run`);
    const val = await vscode.inWebview<ChartPoints>(`window.fsdpCompare?.points('val_loss')`);
    assert.deepEqual(val.x, [10, 20, 30, 40, 60, 80], 'evaluations of both runs on one step axis');
    const diff = await vscode.inWebview<Array<{ key: string; values: Array<string | null> }>>(
      'window.fsdpCompare?.configDiff()',
    );
    const byRun = (values: Array<string | null>) => Object.fromEntries(order.map((r, i) => [r, values[i]]));
    assert.deepEqual(
      diff.map((d) => [d.key, byRun(d.values)]),
      [
        ['training.max_steps', { 'cmp-short': '40', 'cmp-long': '80' }],
        ['training.learning_rate', { 'cmp-short': null, 'cmp-long': '0.003' }],
      ],
    );

    // Smoothing 0: each run's own loss, step by step, on one step axis.
    await vscode.inWebview(
      `(() => { const s = document.getElementById('smoothing'); s.value = '0'; s.dispatchEvent(new Event('input')); return true; })()`,
    );
    const raw = await until(
      'the raw losses',
      () => vscode!.inWebview<ChartPoints>('window.fsdpCompare?.points()'),
      (p) =>
        p.x.length === 80 &&
        p.series.length === 2 &&
        p.series.every((s) => Math.abs((s.y[1] as number) - syntheticLoss(2)) < 1e-9),
      30_000,
    );
    assert.deepEqual(
      raw.x,
      Array.from({ length: 80 }, (_, i) => i + 1),
    );
    for (const s of raw.series) {
      const steps = s.label.startsWith('cmp-short') ? 40 : 80;
      s.y.forEach((v, i) => {
        if (i < steps)
          assert.ok(Math.abs((v as number) - syntheticLoss(i + 1)) < 1e-9, `${s.label} step ${i + 1}: ${v}`);
        else assert.ok(v === null || v === undefined, `${s.label} has no step ${i + 1}: ${v}`);
      });
    }

    // Smoothing 0.6: the debiased EMA starts at the first loss and then departs from the raw line.
    await vscode.inWebview(
      `(() => { const s = document.getElementById('smoothing'); s.value = '0.6'; s.dispatchEvent(new Event('input')); return true; })()`,
    );
    const smooth = await until(
      'the smoothed losses',
      () => vscode!.inWebview<ChartPoints>('window.fsdpCompare?.points()'),
      (p) => p.series.length === 2 && Math.abs((p.series[0].y[5] as number) - syntheticLoss(6)) > 1e-6,
      30_000,
    );
    for (const s of smooth.series)
      assert.ok(Math.abs((s.y[0] as number) - syntheticLoss(1)) < 1e-9, `${s.label} starts at the first loss`);
    await vscode.screenshot('compare-runs');
    await vscode.screenshotEditor('docs-compare-runs');

    // The same set again shows its tab; another set opens another.
    const compareTabs = () => vscode!.page.locator('.tabs-container .tab', { hasText: 'Compare' }).count();
    assert.equal(await compareTabs(), 1);
    await vscode.runCommand('FSDP: Compare runs');
    await vscode.pickQuickItem('cmp-long');
    await vscode.pickQuickItem('cmp-short');
    await vscode.page.keyboard.press('Enter');
    await vscode.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 20_000 });
    assert.equal(await compareTabs(), 1, 'the same runs: the same tab');
    await vscode.runCommand('FSDP: Compare runs');
    await vscode.pickQuickItem('cmp-third');
    await vscode.pickQuickItem('cmp-short');
    await vscode.page.keyboard.press('Enter');
    await until('a second comparison tab', compareTabs, (n) => n === 2, 30_000);
    // Its webview keeps the runs in its state once it has drawn them: what a reload restores.
    await until(
      'the second comparison',
      () => vscode!.inWebview<Compared>('window.fsdpCompare?.runs()', 60_000),
      (r) =>
        r
          .map((x) => x.label.split(' ')[0])
          .sort()
          .join() === 'cmp-short,cmp-third',
      60_000,
    );

    await vscode.reload();
    assert.equal((await compared(2)).length, 2, 'the comparison is restored with both runs after a reload');
  });
});
