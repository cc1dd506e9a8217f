// A person's own PyTorch training in a real VS Code: a 2-rank DDP script (PyTorch 2 from .venv, CPU,
// gloo; ranks started by the companion's supervisor with the environment rendezvous), launched from
// the palette through a launch spec — its loss fills the dashboard and the "all scalars" section, a
// reload mid-run keeps every step once, Stop stops every rank after the same step, Resume continues
// with every step once, and the NaN diagnostics view names the module where a NaN was planted. The
// same over a real sshd on 127.0.0.1 (the same filesystem, so the host runs the same .venv). Also
// `torchrun --nproc_per_node 2` with FSDP2 fully_shard (SummaryWriter scalars on the dashboard, Stop
// through torchrun to both ranks, Resume from the DCP checkpoint), and a Hugging Face Trainer whose
// planted NaN the NaN view names by module (fsdp_studio.watch). A DeepSpeed config launched with
// its launcher around the script picked, reviewed first, its ranks from the config, refused while
// deepspeed is not installed. And a TensorBoard log folder of the workspace, attached.
import assert from 'node:assert/strict';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { LocalMachine } from '../../runs/machines/local-machine';
import { DDP_SCRIPT, pythonWithoutTorch, VENV_PYTHON } from '../harness/pytorch';
import { LoopbackSshd } from '../harness/sshd';
import { syntheticLoss } from '../harness/synthetic-run';
import { writeTensorBoardRun } from '../harness/tensorboard-file';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

interface ChartPoints {
  x: number[];
  series: Array<{ label: string; y: Array<number | null> }>;
}
interface Header {
  runId: string;
  status: string;
  reason?: string;
  step?: number;
  target: string;
  canStop: boolean;
  canResume: boolean;
  summary: Array<[string, string]>;
}
/** The DeepSpeed sample: its batch keys imply 4 ranks (train_batch_size 64 = micro-batch 4 × accumulation 4 × 4). */
const SAMPLE_DS_CONFIG = path.join(repoRoot, 'samples', 'ds_config.json');

/** The "FSDP Studio" output channel's log, from a copy of VS Code's logs. */
function outputLog(logs: string): string {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.includes('FSDP Studio')) found.push(readFileSync(p, 'utf8'));
    }
  };
  walk(logs);
  return found.join('\n');
}

interface TagsSnapshot {
  groups: Array<{ group: string; open: boolean; tags: string[]; drawnIn: Record<string, string> }>;
  points: Record<string, { x: number[] }>;
}

const STEPS = 40;

/** The loss of each step as the companion wrote it (rank 0's scalars events; the last write of a step wins). */
function lossesLogged(runDir: string): Map<number, number | null> {
  const out = new Map<number, number | null>();
  for (const line of readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line) as { type: string; step: number; values?: Record<string, number | null> };
    if (e.type !== 'scalars' || !e.values || !('loss' in e.values)) continue;
    for (const s of [...out.keys()]) if (s >= e.step) out.delete(s);
    out.set(e.step, e.values.loss);
  }
  return out;
}

function assertEveryStepOnce(p: ChartPoints, runDir: string, what: string): void {
  const written = lossesLogged(runDir);
  assert.ok(p.x.length > 0, `${what}: no points`);
  assert.deepEqual(
    p.x,
    Array.from({ length: p.x.length }, (_, i) => i + 1),
    `${what}: steps 1..${p.x.length}, no gap, no double`,
  );
  const loss = p.series.find((s) => s.label === 'loss')!;
  loss.y.forEach((v, i) => assert.equal(v, written.get(i + 1), `${what}: loss of step ${i + 1}`));
}

function spec(workspace: string, name: string, lines: string[]): void {
  const command = [
    VENV_PYTHON,
    'train.py',
    '--steps',
    String(STEPS),
    '--checkpoint',
    `ckpt-${name}`,
    '--save-every',
    '1000',
    '--eval-every',
    '20',
    ...lines,
  ];
  writeFileSync(
    path.join(workspace, `${name}.fsdp-launch.yaml`),
    [
      `name: ${name}`,
      `command: ${JSON.stringify(command)}`,
      'nproc_per_node: 2',
      `python: ${JSON.stringify(VENV_PYTHON)}`,
      'env: {OMP_NUM_THREADS: 1}',
      '',
    ].join('\n'),
  );
}

describe('e2e: your own PyTorch script launched, watched, stopped, resumed and diagnosed', function () {
  this.timeout(20 * 60_000);
  let sshd: LoopbackSshd;
  let workspace: string;
  let remoteBase: string;
  let vscode: VsCodeSession;
  const local = new LocalMachine();
  const groups: number[] = [];

  const header = () => vscode.inWebview<Header>('window.fsdpDashboard?.header()', 60_000);
  const dashboardOf = (runId: string, expr: string) =>
    `window.fsdpDashboard?.header()?.runId === ${JSON.stringify(runId)} ? window.fsdpDashboard.${expr} : undefined`;
  const lossOf = (runId: string) => vscode.inWebview<ChartPoints>(dashboardOf(runId, 'points("loss")'), 60_000);

  /**
   * The NaN diagnostics view of a run, on the anomaly rank 1 reported where the NaN was made (rank
   * 0 reports later, from the averaged gradients, in its update): where it says the NaN was.
   */
  const nanWhere = async (run: string, layer = 'blocks.1.mlp'): Promise<Record<string, string>> => {
    // A run that just ended updates its views, which can take the focus and close a picker opened
    // just then (the row found, then hidden before the click): open it again.
    for (let attempt = 1; ; attempt++) {
      await vscode.runCommand('FSDP: Show NaN diagnostics');
      if (
        await vscode.pickQuickItem(run, 10_000).then(
          () => true,
          () => false,
        )
      )
        break;
      if (attempt === 3)
        throw new Error(`the run picker of "Show NaN diagnostics" closed before ${run} could be picked, three times`);
    }
    const frame = await vscode.webviewFrame(`document.getElementById('where-layer')`, 60_000);
    const origin = frame.locator('.anomaly-list button', { hasText: layer });
    if (await origin.count()) await origin.first().click();
    return vscode.inWebview<Record<string, string>>(
      `document.getElementById('where-layer')?.textContent === ${JSON.stringify(layer)} ? Object.fromEntries(['layer', 'phase', 'op'].map((k) => [k, document.getElementById('where-' + k).textContent])) : undefined`,
      60_000,
    );
  };

  before(async () => {
    sshd = await LoopbackSshd.start({ alias: 'gpu-box' });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-cmd-ws-'));
    remoteBase = mkdtempSync(path.join(os.tmpdir(), 'fsdp-cmd-remote-'));
    copyFileSync(DDP_SCRIPT, path.join(workspace, 'train.py'));
    for (const script of ['hf_train.py'])
      copyFileSync(path.join(path.dirname(DDP_SCRIPT), script), path.join(workspace, script));
    vscode = await VsCodeSession.open({
      workspace,
      settings: { 'fsdp.ssh.configFile': sshd.clientConfig, 'fsdp.remote.directory': remoteBase },
    });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    for (const g of groups) await local.signal(g, 'SIGKILL');
    await sshd?.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(remoteBase, { recursive: true, force: true });
  });

  it('on this machine: palette launch, the loss and every tag on the dashboard, reload, Stop (every rank), Resume, and the NaN named by module', async () => {
    // The run waits after step 10 while this file exists, so Stop finds it running however slow the reload is.
    const hold = path.join(workspace, 'hold-ddp');
    writeFileSync(hold, '');
    spec(workspace, 'ddp', ['--nan-step', '36', '--nan-rank', '1', '--hold-at', '10', '--hold-while', hold]);
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('ddp.fsdp-launch.yaml');
    const first = await until('the run to report steps', header, (h) => !!h.runId && (h.step ?? 0) >= 3, 180_000);
    const runDir = path.join(workspace, 'runs', first.runId);
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as {
      kind: string;
      pgid: number;
      pids: number[];
    };
    assert.equal(manifest.kind, 'command');
    groups.push(manifest.pgid);
    assert.deepEqual(Object.fromEntries(first.summary).world, '2 ranks (python)');
    assertEveryStepOnce(await lossOf(first.runId), runDir, 'while filling');
    const tags = await vscode.inWebview<TagsSnapshot>(dashboardOf(first.runId, 'tags()'));
    assert.deepEqual(tags.groups[0].drawnIn, {
      loss: 'Loss',
      lr: 'Learning rate',
      grad_norm: 'Gradient norm',
      tokens_per_s: 'Throughput',
    });

    await vscode.reload();
    const restored = await until(
      'the restored dashboard',
      () => lossOf(first.runId),
      (p) => p.x.length > 3,
      120_000,
    );
    assertEveryStepOnce(restored, runDir, 'after the reload');

    await until('Stop to be offered', header, (h) => h.canStop && (h.step ?? 0) >= 8, 60_000);
    await (await vscode.webviewFrame('window.fsdpDashboard')).locator('#action-stop').click();
    const stopped = await until('the run to stop', header, (h) => h.status === 'stopped', 120_000);
    assert.ok(stopped.canResume);
    rmSync(hold);
    const out = readFileSync(path.join(runDir, 'stdout.log'), 'utf8');
    const at = /rank 0: stopped after step (\d+)/.exec(out)?.[1];
    assert.ok(at, out);
    assert.match(out, new RegExp(`rank 1: stopped after step ${at}`), 'both ranks stopped after the same step');
    await until(
      'nothing of the run left',
      () => local.isAlive(manifest.pgid),
      (alive) => !alive,
      30_000,
    );

    await (await vscode.webviewFrame('window.fsdpDashboard')).locator('#action-resume').click();
    await vscode.waitForNotification(/NaN in forward, layer blocks\.1\.mlp/, 300_000);
    const done = await until('the resumed run to complete', header, (h) => h.status === 'completed', 300_000);
    assert.equal(done.step, STEPS);
    const final = await lossOf(first.runId);
    assert.equal(final.x.length, STEPS);
    assertEveryStepOnce(final, runDir, 'after Stop and Resume');
    const evalTags = await vscode.inWebview<TagsSnapshot>(dashboardOf(first.runId, 'tags()'));
    assert.equal(evalTags.groups.find((g) => g.group === 'eval')?.drawnIn['eval/loss'], 'Loss');
    await vscode.screenshot('launch-command-completed');

    assert.deepEqual(await nanWhere('ddp'), { layer: 'blocks.1.mlp', phase: 'forward', op: 'Mlp' });
    assert.match(
      await vscode.inWebview<string>(`document.querySelector('tr.highlight')?.textContent`, 30_000),
      /blocks\.1\.mlp/,
    );
    // The advice speaks about the person's script in PyTorch's words, and nothing offers to edit a file.
    const fixes = await vscode.inWebview<Array<{ text: string; buttons: number }>>(
      `(() => { const f = [...document.querySelectorAll('.fix')].map((r) => ({ text: r.textContent, buttons: r.querySelectorAll('vscode-button').length })); return f.length ? f : undefined; })()`,
      30_000,
    );
    assert.deepEqual(
      fixes.map((f) => f.buttons),
      fixes.map(() => 0),
      'no fix edits a file of a script run',
    );
    const advice = fixes.map((f) => f.text).join('\n');
    assert.match(advice, /torch\.nn\.utils\.clip_grad_norm_\(model\.parameters\(\), 1\.0\) in train\.py/);
    assert.doesNotMatch(advice, /max_grad_norm|training\.|prepare-data/);
    await vscode.screenshot('launch-command-nan');
    // For docs/screenshots: the advice itself, scrolled into view (issue 28, item 2).
    await vscode.inWebview<boolean>(
      `(() => { const f = document.querySelector('.fix'); if (!f) return undefined; f.scrollIntoView({ block: 'center' }); return true; })()`,
    );
    await vscode.screenshotEditor('docs-nan-advice-script');
  });

  it('torchrun --nproc_per_node 2 with FSDP2 fully_shard: SummaryWriter scalars on the dashboard, Stop through torchrun to both ranks, Resume from the DCP checkpoint', async () => {
    const steps = 16;
    const command = [
      path.join(path.dirname(VENV_PYTHON), 'torchrun'),
      '--standalone',
      '--nproc_per_node',
      '2',
      path.join(repoRoot, 'samples', 'pytorch', 'fsdp2_train.py'),
      '--data',
      path.join(repoRoot, 'samples', 'data', 'fortunes-byte-train.tok'),
      '--batch',
      '4',
      '--seq',
      '32',
      '--steps',
      String(steps),
      '--step-sleep',
      '0.4',
      '--tb',
      'tb-fsdp2',
      '--checkpoint',
      'ckpt-fsdp2',
      '--save-every',
      '100',
    ];
    writeFileSync(
      path.join(workspace, 'fsdp2.fsdp-launch.yaml'),
      [
        `name: fsdp2`,
        `command: ${JSON.stringify(command)}`,
        'logs: {tensorboard: tb-fsdp2}',
        'env: {OMP_NUM_THREADS: 1}',
        '',
      ].join('\n'),
    );
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('fsdp2.fsdp-launch.yaml');
    const first = await until(
      'the FSDP2 run to report steps',
      header,
      (h) => h.runId?.startsWith('fsdp2-') && (h.step ?? 0) >= 3,
      300_000,
    );
    const runDir = path.join(workspace, 'runs', first.runId);
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { pgid: number };
    groups.push(manifest.pgid);
    const tags = await vscode.inWebview<TagsSnapshot>(dashboardOf(first.runId, 'tags()'));
    assert.deepEqual(tags.groups.find((g) => g.group === 'train')?.drawnIn, {
      'train/loss': 'Loss',
      'train/learning_rate': 'Learning rate',
      'train/grad_norm': 'Gradient norm',
      'train/tokens_per_s': 'Throughput',
    });

    await until('Stop to be offered', header, (h) => h.canStop && (h.step ?? 0) >= 4, 60_000);
    await (await vscode.webviewFrame('window.fsdpDashboard')).locator('#action-stop').click();
    await until('the FSDP2 run to stop', header, (h) => h.status === 'stopped', 120_000);
    const out = readFileSync(path.join(runDir, 'stdout.log'), 'utf8');
    const at = /rank 0: stopped after step (\d+)/.exec(out)?.[1];
    assert.ok(at, out);
    assert.match(out, new RegExp(`rank 1: stopped after step ${at}`), 'torchrun passed the stop to both ranks');
    assert.ok(
      existsSync(path.join(workspace, 'ckpt-fsdp2', `step-${at}`, '.metadata')),
      'the DCP checkpoint of the stop',
    );
    await until(
      'nothing of the run left',
      () => local.isAlive(manifest.pgid),
      (alive) => !alive,
      60_000,
    );

    await (await vscode.webviewFrame('window.fsdpDashboard')).locator('#action-resume').click();
    const done = await until(
      'the resumed FSDP2 run to complete',
      header,
      (h) => h.runId === first.runId && h.status === 'completed',
      300_000,
    );
    assert.equal(done.step, steps);
    assert.match(
      readFileSync(path.join(runDir, 'stdout.log'), 'utf8'),
      new RegExp(`rank 0: resumed from ckpt-fsdp2/step-${at}`),
    );
    const loss = await until(
      'every step on the loss chart',
      () => lossOf(first.runId),
      (p) => p.x.length === steps,
      60_000,
    );
    assert.deepEqual(
      loss.x,
      Array.from({ length: steps }, (_, i) => i + 1),
    );
    await vscode.screenshot('launch-torchrun-fsdp2');
  });

  it('a Hugging Face Trainer (GPT-2, random init) with report_to tensorboard and FsdpStudioCallback: its loss on the dashboard, its planted NaN named by module in the NaN view', async () => {
    const steps = 12;
    const command = [
      VENV_PYTHON,
      'hf_train.py',
      '--out',
      'hf-out',
      '--steps',
      String(steps),
      '--step-sleep',
      '0.2',
      '--nan-step',
      '9',
      '--nan-module',
      'transformer.h.1.mlp',
    ];
    writeFileSync(
      path.join(workspace, 'hf.fsdp-launch.yaml'),
      [
        `name: hf`,
        `command: ${JSON.stringify(command)}`,
        'logs: {tensorboard: hf-out/runs}',
        'env: {OMP_NUM_THREADS: 1, HF_HUB_OFFLINE: 1}',
        '',
      ].join('\n'),
    );
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('hf.fsdp-launch.yaml');
    await vscode.waitForNotification(/NaN in forward, layer transformer\.h\.1\.mlp/, 300_000);
    const done = await until(
      'the Hugging Face run to complete',
      header,
      (h) => h.runId?.startsWith('hf-') && h.status === 'completed',
      300_000,
    );
    groups.push(
      (JSON.parse(readFileSync(path.join(workspace, 'runs', done.runId, 'run.json'), 'utf8')) as { pgid: number }).pgid,
    );
    const loss = await until(
      'its loss chart',
      () => lossOf(done.runId),
      (p) => p.x.length === steps,
      60_000,
    );
    assert.deepEqual(loss.x.slice(0, 8), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(await nanWhere('hf', 'transformer.h.1.mlp'), {
      layer: 'transformer.h.1.mlp',
      phase: 'forward',
      op: 'GPT2MLP',
    });
    await vscode.screenshot('launch-hf-trainer-nan');
  });

  it('on an SSH host (loopback sshd): the same script launched there, watched across a reload, its NaN named, stopped on every rank', async () => {
    // The run waits after step 8 while this file exists (the host sees this machine's files), so it
    // is still running when stopped by hand, however long the reload takes.
    const hold = path.join(workspace, 'hold-ddp-ssh');
    writeFileSync(hold, '');
    spec(workspace, 'ddp-ssh', ['--nan-step', '6', '--nan-rank', '1', '--hold-at', '8', '--hold-while', hold]);
    const specFile = path.join(workspace, 'ddp-ssh.fsdp-launch.yaml');
    writeFileSync(specFile, `${readFileSync(specFile, 'utf8')}target: gpu-box\ncwd: ${JSON.stringify(workspace)}\n`);
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('ddp-ssh.fsdp-launch.yaml');
    const h = await until(
      'the run on gpu-box to report steps',
      header,
      (x) => x.target === 'gpu-box' && (x.step ?? 0) >= 8,
      300_000,
    );
    const runDir = path.join(remoteBase, 'runs', h.runId);
    assert.ok(existsSync(path.join(runDir, 'run.json')), 'the run folder is on the host');
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as {
      target: string;
      pgid: number;
    };
    assert.equal(manifest.target, 'gpu-box');
    groups.push(manifest.pgid);

    await vscode.reload();
    const restored = await until(
      'the re-attached history',
      () => lossOf(h.runId),
      (p) => p.x.length >= 8,
      120_000,
    );
    assertEveryStepOnce(restored, runDir, 'after a reload, over ssh');

    assert.deepEqual(await nanWhere('ddp-ssh'), { layer: 'blocks.1.mlp', phase: 'forward', op: 'Mlp' });

    await vscode.runCommand('FSDP: Stop run');
    await vscode.pickQuickItem('ddp-ssh');
    const status = async () =>
      (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { status: string }).status;
    await until('the remote run to stop', status, (s) => s === 'stopped', 120_000);
    // The stopped run's views update as the pick opens and can take the focus, closing it (CI): open it again.
    for (let attempt = 1; ; attempt++) {
      await vscode.runCommand('FSDP: Open run dashboard');
      if (
        await vscode.pickQuickItem('ddp-ssh', 10_000).then(
          () => true,
          () => false,
        )
      )
        break;
      if (attempt === 3)
        throw new Error('the run picker of "Open run dashboard" closed before ddp-ssh could be picked, three times');
    }
    await until('its dashboard to say so', header, (x) => x.runId === h.runId && x.status === 'stopped', 60_000);
    const out = readFileSync(path.join(runDir, 'stdout.log'), 'utf8');
    const at = /rank 0: stopped after step (\d+)/.exec(out)?.[1];
    assert.ok(at, out);
    assert.match(out, new RegExp(`rank 1: stopped after step ${at}`));
    assertEveryStepOnce(await lossOf(h.runId), runDir, 'stopped, over ssh');
  });

  it('a DeepSpeed config: a spec with the ranks the config implies, opened for review first; launched when asked, its memory estimate shown, refused before anything starts since deepspeed is not installed here', async () => {
    copyFileSync(SAMPLE_DS_CONFIG, path.join(workspace, 'ds_config.json'));
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('ds_config.json');
    await vscode.pickQuickItem(/^train\.py/); // not hf_train.py, which the workspace also holds
    // The review: what will run, with its ranks and the config's own count; nothing has started.
    const review = vscode.page
      .locator('.notifications-toasts .notification-toast', {
        hasText: /Review ds_config\.fsdp-launch\.yaml before it runs/,
      })
      .first();
    await review.waitFor({ timeout: 60_000 });
    assert.match(
      (await review.textContent()) ?? '',
      /deepspeed --num_gpus 4 train\.py --deepspeed ds_config\.json — 4 ranks on this machine; ds_config\.json implies 4 \(train_batch_size 64 ÷ \(micro-batch 4 × accumulation 4\)\)/,
    );
    const written = readFileSync(path.join(workspace, 'ds_config.fsdp-launch.yaml'), 'utf8');
    assert.match(
      written,
      /^command: \["deepspeed","--num_gpus","4","train.py","--deepspeed","ds_config.json"\]$/m,
      'the ranks the config implies (64 ÷ (4 × 4)), not 1',
    );
    assert.match(written, /^config: "ds_config.json"$/m);
    assert.match(await vscode.editorText(), /--num_gpus/, 'the spec is open for review');
    const runsDir = path.join(workspace, 'runs');
    const dsRuns = () => (existsSync(runsDir) ? readdirSync(runsDir).filter((d) => d.startsWith('ds_config-')) : []);
    assert.deepEqual(dsRuns(), [], 'nothing starts before the review');
    await vscode.screenshot('docs-launch-deepspeed-review');
    await review.locator('.monaco-button', { hasText: /^Launch$/ }).click();
    const refused = await vscode.waitForNotification(/Launching ds_config\.fsdp-launch\.yaml failed/, 120_000);
    assert.match(
      refused,
      /cannot start deepspeed on this machine: deepspeed is not on the PATH\. DeepSpeed installs it \(pip install deepspeed/,
    );
    assert.deepEqual(dsRuns(), [], 'no run folder for a launcher that is not there');
    const log = outputLog(vscode.saveLogs('launch-deepspeed'));
    assert.match(log, /ds_config\.json: ≈ [\d.]+ GiB \/ GPU/, 'the memory estimate was shown before the launch');
  });

  it('attaches to a TensorBoard log folder of the workspace: its loss in the loss chart, its tags in groups', async () => {
    const dir = path.join(workspace, 'tb_logs', 'Nov23_host');
    mkdirSync(dir, { recursive: true });
    await writeTensorBoardRun(dir, 60, 0, syntheticLoss);
    await vscode.runCommand('FSDP: Attach to run');
    await vscode.pickQuickItem('tb_logs/Nov23_host');
    const p = await until(
      "the folder's loss",
      () => lossOf('Nov23_host'),
      (x) => x.x.length === 60,
      60_000,
    );
    assert.deepEqual(
      p.x,
      Array.from({ length: 60 }, (_, i) => i + 1),
    );
    p.series.find((s) => s.label === 'loss')!.y.forEach((v, i) => assert.equal(v, Math.fround(syntheticLoss(i + 1))));
    const tags = await vscode.inWebview<TagsSnapshot>(dashboardOf('Nov23_host', 'tags()'));
    assert.deepEqual(tags.groups, [
      {
        group: 'train',
        open: true,
        tags: ['train/loss', 'train/learning_rate'],
        drawnIn: { 'train/loss': 'Loss', 'train/learning_rate': 'Learning rate' },
      },
    ]);
    await vscode.screenshot('attach-tensorboard');
  });

  it('a spec whose python: has no torch: the run fails, and the message names that interpreter, its version and where to choose another (issue 28, item 3)', async () => {
    const bare = pythonWithoutTorch(path.join(workspace, 'no-torch'));
    writeFileSync(
      path.join(workspace, 'notorch.fsdp-launch.yaml'),
      ['name: notorch', 'command: python3 train.py --steps 5', `python: ${JSON.stringify(bare)}`, ''].join('\n'),
    );
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('notorch.fsdp-launch.yaml');
    const said = await vscode.waitForNotification(/notorch failed before its first step: /, 120_000);
    assert.ok(said.includes(`No module named 'torch' — the Python that ran it, ${bare} (Python 3.`), said);
    assert.match(said, /launch spec's python: key/);
    await vscode.screenshot('docs-launch-no-torch');
  });
});
