// Attach and watch in a real VS Code: a run that is already writing its run folder (test data from
// the synthetic writer; the launch tests run the real trainer) is attached from the palette; the
// dashboard's loss chart fills; a window reload mid-run brings the whole history back with no gap
// and no double; a planted NaN shows in the diagnostics view with its layer.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalMachine } from '../../extension/runs/local-machine';
import { repoRoot } from '../../scripts/code-server';
import { syntheticLoss } from '../harness/synthetic-run';
import { VsCodeSession } from './harness/vscode-session';

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
  assert.deepEqual(p.x, Array.from({ length: n }, (_, i) => i + 1), `${what}: steps are 1..${n} without gaps or doubles`);
  const raw = p.series.find((s) => s.label === 'loss')!;
  raw.y.forEach((v, i) => assert.ok(Math.abs((v as number) - syntheticLoss(i + 1)) < 1e-9, `${what}: loss of step ${i + 1} is ${v}`));
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
    const argv = [process.execPath, '--import', 'tsx', path.join(repoRoot, 'test', 'harness', 'synthetic-run.ts'), '--run-dir', runDir, ...args];
    const run = await local.start({ runDir, argv, cwd: repoRoot, manifest: { v: 1, run_id: runId, name: runId, created: Date.now() / 1000, status: 'starting', config: {}, world: { size: 1 }, host: os.hostname(), target: 'local' } });
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
    await vscode!.runCommand('FSDP: Show NaN diagnostics');
    await vscode!.pickQuickItem('nan-run');
    const where = await vscode!.inWebview<Record<string, string>>(
      `document.getElementById('where-layer') ? Object.fromEntries(['layer', 'phase', 'op'].map((k) => [k, document.getElementById('where-' + k).textContent])) : undefined`,
      60_000,
    );
    assert.deepEqual(where, { layer: '1', phase: 'forward', op: 'attn.softmax' });
    await vscode!.screenshot('watch-nan-diagnostics');
  });
});
