// Launching on an SSH host in a real VS Code: a real sshd on 127.0.0.1 plays the GPU box, named
// by an alias in an ssh config file as a person's would be. The run is launched from the palette
// (the runtime on the host comes from its content-hash cache, built there by the first-use test),
// the ssh connections are cut several times mid-run, and the dashboard still ends with every step
// exactly once; a reload re-attaches over ssh and reads the whole history again.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import type { RunConfig } from '../../core/generated/run-config';
import { repoRoot } from '../../scripts/code-server';
import { LoopbackSshd, SHARED_REMOTE_BASE } from '../harness/sshd';
import { lossesWritten } from './harness/losses-written';
import { VsCodeSession } from './harness/vscode-session';
import { untilValue as until } from '../harness/until';

interface ChartPoints {
  x: number[];
  series: Array<{ label: string; y: Array<number | null> }>;
}
interface Header {
  runId: string;
  status: string;
  step?: number;
  target: string;
  connection: { state: string };
}

const SAMPLES = path.join(repoRoot, 'samples');

describe('e2e: a run on an SSH host (real sshd on 127.0.0.1), connections cut mid-run', function () {
  this.timeout(20 * 60_000);
  let sshd: LoopbackSshd;
  let workspace: string;
  let vscode: VsCodeSession | undefined;

  before(async () => {
    sshd = await LoopbackSshd.start({ alias: 'gpu-box' });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-ssh-ws-'));
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    // Whatever still runs on the "host" from this test ends with the test.
    const runs = path.join(SHARED_REMOTE_BASE, 'runs');
    for (const dir of existsSync(runs) ? readdirSync(runs).filter((d) => d.startsWith('tiny-ssh-')) : []) {
      const manifest = JSON.parse(readFileSync(path.join(SHARED_REMOTE_BASE, 'runs', dir, 'run.json'), 'utf8')) as {
        pgid?: number;
      };
      if (manifest.pgid) sshd.exec(`kill -s KILL -- -${manifest.pgid} 2>/dev/null || true`);
      rmSync(path.join(SHARED_REMOTE_BASE, 'runs', dir), { recursive: true, force: true });
    }
    await sshd?.stop();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('launches on the host, survives three cut connections with every step once, and a reload re-attaches to the whole history', async () => {
    const config = parse(readFileSync(path.join(SAMPLES, 'tiny-cpu.yaml'), 'utf8')) as RunConfig;
    config.name = 'tiny-ssh';
    config.data.train = path.join(SAMPLES, config.data.train);
    config.data.val = path.join(SAMPLES, config.data.val!);
    config.launch = { ...config.launch, target: 'gpu-box' };
    writeFileSync(path.join(workspace, 'tiny-ssh.yaml'), stringify(config));
    vscode = await VsCodeSession.open({
      workspace,
      settings: { 'fsdp.ssh.configFile': sshd.clientConfig, 'fsdp.remote.directory': SHARED_REMOTE_BASE },
    });
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('tiny-ssh.yaml');
    // A first launch on this host may build the runtime there (minutes); later ones find it.
    const header = () => vscode!.inWebview<Header>('window.fsdpDashboard?.header()', 60_000);
    const started = await until(
      'the run on gpu-box to report steps',
      header,
      (h) => h.target === 'gpu-box' && (h.step ?? 0) >= 5,
      15 * 60_000,
    );
    const runDir = path.join(SHARED_REMOTE_BASE, 'runs', started.runId);
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as {
      target: string;
      pgid: number;
      command: string[];
    };
    assert.equal(manifest.target, 'gpu-box');
    assert.ok(manifest.pgid > 0, 'the remote run records its process group');

    let cuts = 0;
    for (const step of [15, 40, 70]) {
      await until(`step ${step}`, header, (h) => (h.step ?? 0) >= step || h.status !== 'running', 300_000);
      cuts += sshd.killConnections() > 0 ? 1 : 0;
      await until(
        'the dashboard to say it lost the connection or reconnected',
        header,
        (h) => h.connection.state !== 'live' || (h.step ?? 0) > step,
        30_000,
      );
    }
    assert.equal(cuts, 3, 'three live connections were cut');
    const done = await until('the run to complete', header, (h) => h.status === 'completed', 10 * 60_000);
    await vscode.screenshot('ssh-run-completed');

    const written = lossesWritten(runDir);
    const chart = await vscode.inWebview<ChartPoints>('window.fsdpDashboard?.points("loss")');
    assert.equal(done.step, config.training.max_steps);
    assertEveryStepOnce(chart, written, 'after three cut connections');

    await vscode.reload();
    const again = await until(
      'the re-attached history',
      () => vscode!.inWebview<ChartPoints>('window.fsdpDashboard?.points("loss")', 120_000),
      (p) => p.x.length === written.size,
      120_000,
    );
    assertEveryStepOnce(again, written, 'after a reload');
  });
});

function assertEveryStepOnce(p: ChartPoints, written: Map<number, number | null>, what: string): void {
  assert.deepEqual(
    p.x,
    Array.from({ length: written.size }, (_, i) => i + 1),
    `${what}: steps 1..${written.size}, no gap, no double`,
  );
  const loss = p.series.find((s) => s.label === 'loss')!;
  loss.y.forEach((v, i) => assert.equal(v, written.get(i + 1), `${what}: loss of step ${i + 1}`));
}
