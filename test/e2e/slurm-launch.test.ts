// Launching to a SLURM cluster in a real VS Code: a real one-node SLURM on this machine
// (test/harness/slurm.ts), this machine as the login host (SLURM_CONF in the editor's environment,
// as on a login node). The run is launched from the palette while another job fills the node: the
// runs view, the status bar and the dashboard header show it queued, with the reason; once the node
// frees up they show it running, and the dashboard fills with every step the trainer wrote.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../../scripts/code-server';
import { LocalSlurm } from '../harness/slurm';
import { untilValue as until } from '../harness/until';
import { lossesWritten } from './harness/losses-written';
import { VsCodeSession } from './harness/vscode-session';

interface Header {
  runId: string;
  status: string;
  reason?: string;
  step?: number;
  canStop: boolean;
}

const SAMPLES = path.join(repoRoot, 'samples');
const STEPS = 60;

describe('e2e: a run submitted to SLURM from the palette (real slurmctld and slurmd on this machine)', function () {
  this.timeout(15 * 60_000);
  let slurm: LocalSlurm;
  let workspace: string;
  let vscode: VsCodeSession | undefined;

  before(async () => {
    slurm = await LocalSlurm.start({ cpus: 4 });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-slurm-ws-'));
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    await slurm?.stop();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('shows the job queued (runs view, status bar, dashboard), then running, and the dashboard fills with every step', async () => {
    const config = parse(readFileSync(path.join(SAMPLES, 'tiny-cpu.yaml'), 'utf8')) as {
      name: string;
      data: { train: string; val: string };
      training: Record<string, unknown>;
      fsdp: Record<string, unknown>;
      launch: unknown;
    };
    config.name = 'tiny-slurm';
    config.data.train = path.join(SAMPLES, config.data.train);
    config.data.val = path.join(SAMPLES, config.data.val);
    config.training.max_steps = STEPS;
    config.training.batch_size_per_gpu = 4;
    config.fsdp.sharding_strategy = 'FULL_SHARD';
    config.launch = { target: 'local', device: 'cpu', nproc_per_node: 2, slurm: { time_limit: '00:10:00' } };
    writeFileSync(path.join(workspace, 'tiny-slurm.yaml'), stringify(config));
    // Every CPU of the node taken: the run waits for resources.
    const blocker = slurm.fillNode();
    await until(
      'the blocker to run',
      async () => slurm.jobState(blocker),
      (s) => s === 'RUNNING',
      60_000,
    );

    vscode = await VsCodeSession.open({ workspace, env: { SLURM_CONF: slurm.conf } });
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('tiny-slurm.yaml');
    const header = () => vscode!.inWebview<Header>('window.fsdpDashboard?.header()', 60_000);
    const queued = await until(
      'the dashboard to show the run queued',
      header,
      (h) => h.status === 'queued' && /waiting for resources/.test(h.reason ?? ''),
      180_000,
    );
    assert.ok(queued.canStop, 'a queued run can be stopped');
    const runDir = path.join(workspace, 'runs', queued.runId);
    const jobId = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { slurm: { job_id: string } })
      .slurm.job_id;
    assert.equal(slurm.jobState(jobId), 'PENDING');
    assert.match(
      readFileSync(path.join(runDir, 'job.sbatch'), 'utf8'),
      /^#SBATCH --ntasks-per-node=2$/m,
      'the batch script is kept in the run folder',
    );

    await vscode.runCommand('FSDP Studio: Focus on Runs View');
    const row = vscode.page.locator('.monaco-list-row', { hasText: 'tiny-slurm' }).first();
    const status = vscode.page.locator('.statusbar-item', { hasText: 'tiny-slurm' }).first();
    await until(
      'the runs view to show the job queued',
      () => row.innerText(),
      (t) => new RegExp(`queued · job ${jobId} · waiting for resources`).test(t),
      60_000,
    );
    await until(
      'the status bar to show it queued',
      () => status.innerText(),
      (t) => /queued/.test(t),
      30_000,
    );
    await vscode.screenshot('slurm-queued');

    slurm.check(['scancel', blocker]);
    await until(
      'the runs view to show it running',
      () => row.innerText(),
      (t) => /running · job \d+ · step \d+/.test(t),
      180_000,
    );
    await until(
      'the status bar to show it running',
      () => status.innerText(),
      (t) => /running/.test(t),
      30_000,
    );
    const done = await until('the run to complete', header, (h) => h.status === 'completed', 600_000);
    assert.equal(done.step, STEPS);
    const points = await vscode.inWebview<{ x: number[]; series: Array<{ label: string; y: Array<number | null> }> }>(
      `window.fsdpDashboard?.points('loss') || undefined`,
      60_000,
    );
    assert.deepEqual(
      points.x,
      Array.from({ length: STEPS }, (_, i) => i + 1),
      'every step once',
    );
    const written = lossesWritten(runDir);
    points.series
      .find((s) => s.label === 'loss')!
      .y.forEach((v, i) => assert.equal(v, written.get(i + 1), `loss of step ${i + 1}`));
    await vscode.screenshot('slurm-completed');
  });
});
