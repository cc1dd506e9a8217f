// A script that only prints, in a real VS Code: a PyTorch script printing nanoGPT's lines (no
// companion, no TensorBoard) launched from the palette through a launch spec fills the dashboard's
// loss, validation-loss and step-time charts, the "Starting …" notification closes at its first
// step without ever claiming a first step runs, and the header names where the metrics come from.
// A script that prints nothing the watch reads ends with the header saying so and what to add. A
// Hugging Face Trainer run that diverges (learning_rate 1e8: its grad norm NaN, its loss logged as 0
// by logging_nan_inf_filter) is not shown green, and "Show NaN diagnostics" lists the NaN from the
// printed logs with its step and the Trainer's own arguments to fix it.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalMachine } from '../../runs/machines/local-machine';
import { repoRoot } from '../../scripts/code-server';
import { VENV_PYTHON } from '../harness/pytorch';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

interface Header {
  runId: string;
  status: string;
  step?: number;
  phase?: { label: string; detail?: string };
  metricsNote?: string;
  summary: Array<[string, string]>;
  loss?: number | null;
  nanSince?: number;
  nanText?: string;
}
interface ChartPoints {
  x: number[];
  /** null or undefined where a series has no value at that x. */
  series: Array<{ label: string; y: Array<number | null | undefined> }>;
}

describe('e2e: a script that only prints gets charts', function () {
  this.timeout(15 * 60_000);
  let workspace: string;
  let vscode: VsCodeSession;
  const local = new LocalMachine();
  const groups: number[] = [];
  const header = () => vscode.inWebview<Header>('window.fsdpDashboard?.header()', 60_000);
  const dashboardOf = (runId: string, expr: string) =>
    `window.fsdpDashboard?.header()?.runId === ${JSON.stringify(runId)} ? window.fsdpDashboard.${expr} : undefined`;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-print-ws-'));
    copyFileSync(path.join(repoRoot, 'test', 'pytorch', 'print_only_train.py'), path.join(workspace, 'train.py'));
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    for (const g of groups) await local.signal(g, 'SIGKILL');
    rmSync(workspace, { recursive: true, force: true });
  });

  it("nanoGPT's printed lines fill the loss, validation-loss and step-time charts; the Starting notification closes at the first step", async () => {
    const command = [VENV_PYTHON, 'train.py', '--steps', '40', '--step-sleep', '0.25', '--eval-every', '10'];
    writeFileSync(path.join(workspace, 'print.fsdp-launch.yaml'), `name: print\ncommand: ${JSON.stringify(command)}\n`);
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('print.fsdp-launch.yaml');
    await vscode.waitForNotification(/Starting print/, 60_000);
    const phases = new Set<string>();
    const first = await until(
      'a printed step on the dashboard',
      async () => {
        const h = await header();
        if (h.phase) phases.add(h.phase.label);
        return h;
      },
      (h) => (h.step ?? -1) >= 3,
      180_000,
    );
    groups.push(
      (JSON.parse(readFileSync(path.join(workspace, 'runs', first.runId, 'run.json'), 'utf8')) as { pgid: number })
        .pgid,
    );
    assert.ok(![...phases].includes('Running the first step'), `phases seen: ${[...phases].join(', ')}`);
    // The notification closes at the first step (it is not left spinning for the whole run).
    await until(
      'the Starting notification to close',
      () => vscode.notificationsText(),
      (t) => !/Starting print/.test(t),
      30_000,
    );
    const done = await until('the run to complete', header, (h) => h.status === 'completed', 300_000);
    assert.equal(done.step, 40);
    assert.match(Object.fromEntries(done.summary).metrics, /^nanoGPT lines in stdout/);
    assert.equal(done.metricsNote, undefined);
    const loss = await vscode.inWebview<ChartPoints>(dashboardOf(done.runId, 'points("loss")'));
    assert.deepEqual(
      loss.x,
      Array.from({ length: 41 }, (_, i) => i),
      'iter 0..40, each once',
    );
    const printed = [
      ...readFileSync(path.join(workspace, 'runs', done.runId, 'stdout.log'), 'utf8').matchAll(
        /^iter (\d+): loss ([\d.]+)/gm,
      ),
    ].map((m) => Number(m[2]));
    assert.deepEqual(loss.series.find((s) => s.label === 'loss')!.y, printed);
    const charts = await vscode.inWebview<Array<{ id: string; series: Array<{ label: string }>; empty?: string }>>(
      dashboardOf(done.runId, 'charts()'),
    );
    assert.ok(
      charts.find((c) => c.id === 'loss')!.series.some((s) => s.label === 'val loss'),
      'the evaluation lines give the validation loss',
    );
    // A PyTorch CPU run reports no memory: its chart says so, and what to log, instead of an empty box.
    assert.match(
      charts.find((c) => c.id === 'memory')!.empty ?? '',
      /^No memory reported: .*PyTorch keeps no allocator peak on the CPU/,
    );
    assert.ok(
      await (
        await vscode.webviewFrame(dashboardOf(done.runId, 'header()'))
      )
        .locator('.chart-memory .chart-empty')
        .isVisible(),
    );
    await vscode.screenshotEditor('docs-dashboard-printed-metrics');
  });

  it("build-nanogpt's printed lines fill the learning-rate, throughput and validation-loss charts too", async () => {
    const command = [VENV_PYTHON, 'train.py', '--format', 'build-nanogpt', '--steps', '20', '--eval-every', '5'];
    writeFileSync(path.join(workspace, 'bng.fsdp-launch.yaml'), `name: bng\ncommand: ${JSON.stringify(command)}\n`);
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('bng.fsdp-launch.yaml');
    const done = await until(
      'the build-nanogpt-style run to complete',
      header,
      (h) => h.status === 'completed' && h.runId.startsWith('bng') && h.step === 20,
      300_000,
    );
    // The completion toast says the step and loss the dashboard shows (issue 39 item 5).
    const toast = await vscode.waitForNotification(/bng completed at step \d+/, 60_000);
    assert.match(toast, new RegExp(`bng completed at step 20, loss ${done.loss!.toFixed(3).replace('.', '\\.')}\\.`));
    // The status bar says what the header says (issue 39 item 5: it kept "bng: running · step 20"
    // beside a completed header, because run.json's end changed the status without an event).
    const statusBar = vscode.page.locator('.statusbar-item', { hasText: 'bng:' }).first();
    await until(
      'the status bar to agree with the header',
      () => statusBar.innerText(),
      (t) => t.includes(`bng: ${done.status} · step ${done.step} · loss ${done.loss!.toFixed(3)}`),
      30_000,
    );
    await vscode.screenshot('docs-notification-completed-step-loss');
    const out = readFileSync(path.join(workspace, 'runs', done.runId, 'stdout.log'), 'utf8');
    const column = (re: RegExp) => [...out.matchAll(re)].map((m) => Number(m[1]));
    const points = (id: string) =>
      vscode.inWebview<ChartPoints>(dashboardOf(done.runId, `points(${JSON.stringify(id)})`));
    const lr = await points('lr');
    assert.deepEqual(
      lr.x,
      Array.from({ length: 21 }, (_, i) => i),
    );
    assert.deepEqual(
      lr.series.find((s) => s.label === 'lr')!.y,
      column(/\| lr ([\d.e+-]+) \|/g),
      '`lr X` without a colon is read',
    );
    const throughput = await points('tokens_per_s');
    assert.deepEqual(throughput.series.find((s) => s.label === 'tokens/s')!.y, column(/tok\/sec: ([\d.]+)/g));
    const loss = await points('loss');
    const val = loss.series.find((s) => s.label === 'val loss')!;
    // Its `validation loss: X` line comes at the top of steps 0, 5, 10, 15, 20, before that step's line.
    assert.deepEqual(
      loss.x.filter((_, i) => typeof val.y[i] === 'number'),
      [0, 5, 10, 15, 20],
    );
    assert.deepEqual(
      val.y.filter((v) => typeof v === 'number'),
      column(/^validation loss: ([\d.]+)$/gm),
    );
  });

  it('a NaN printed while the run goes on: a toast at once, every NaN series in the NaN view, the end not green', async () => {
    const command = [
      VENV_PYTHON,
      'train.py',
      '--format',
      'build-nanogpt',
      '--steps',
      '30',
      '--step-sleep',
      '0.3',
      '--eval-every',
      '10',
      '--nan-step',
      '5',
    ];
    writeFileSync(
      path.join(workspace, 'bngnan.fsdp-launch.yaml'),
      `name: bngnan\ncommand: ${JSON.stringify(command)}\n`,
    );
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('bngnan.fsdp-launch.yaml');
    // Told while it runs (about 8 s of steps remain), not only at its end.
    await vscode.waitForNotification(/bngnan.*: printed\/loss NaN at step 5\./, 120_000);
    const done = await until(
      'the NaN run to complete',
      header,
      (h) => h.status === 'completed' && h.runId.startsWith('bngnan') && h.step === 30,
      300_000,
    );
    assert.equal(done.nanText, 'loss NaN since step 5');
    await vscode.waitForNotification(/bngnan.*completed at step 30, but not cleanly: loss NaN since step 5\./, 60_000);
    for (let attempt = 1; ; attempt++) {
      await vscode.runCommand('FSDP: Show NaN diagnostics');
      if (
        await vscode.pickQuickItem('bngnan', 10_000).then(
          () => true,
          () => false,
        )
      )
        break;
      if (attempt === 3) throw new Error('the run picker of "Show NaN diagnostics" closed three times');
    }
    // Each series at its first NaN step; the validation loss printed at the top of step 10.
    const listed = await vscode.inWebview<string[]>(
      `document.querySelectorAll('.anomaly-list button').length === 3 ? [...document.querySelectorAll('.anomaly-list button')].map((b) => b.textContent) : undefined`,
      60_000,
    );
    assert.deepEqual(listed, [
      'step 5: printed/loss NaN from step 5',
      'step 5: printed/norm NaN from step 5',
      'step 10: printed/validation_loss NaN from step 10',
    ]);
  });

  it("a diverging HF Trainer run (grad norm NaN, loss logged as 0) is not green, and the NaN view names the step and the Trainer's arguments", async () => {
    // The Trainer as the run_clm.py --learning_rate 1e8 runs it, small enough for the CPU; it prints its logs only.
    writeFileSync(
      path.join(workspace, 'hf_diverge.py'),
      [
        'import torch',
        'from transformers import (',
        '    GPT2Config,',
        '    GPT2LMHeadModel,',
        '    Trainer,',
        '    TrainingArguments,',
        ')',
        'class Tokens(torch.utils.data.Dataset):',
        '    def __len__(self): return 64',
        '    def __getitem__(self, i):',
        '        x = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))',
        '        return {"input_ids": x, "labels": x}',
        'model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2))',
        'args = TrainingArguments(output_dir="hf-out", max_steps=6, logging_steps=1, learning_rate=1e8, per_device_train_batch_size=4, report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True)',
        'Trainer(model=model, args=args, train_dataset=Tokens()).train()',
        '',
      ].join('\n'),
    );
    writeFileSync(
      path.join(workspace, 'hfnan.fsdp-launch.yaml'),
      `name: hfnan\ncommand: ${JSON.stringify([VENV_PYTHON, 'hf_diverge.py'])}\n`,
    );
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('hfnan.fsdp-launch.yaml');
    const hidden = 'the loss is hidden by logging_nan_inf_filter; the gradient norm is NaN since step 2';
    const h = await until(
      'the diverging run to complete',
      header,
      (x) => x.status === 'completed' && x.runId.startsWith('hfnan') && x.step === 6,
      300_000,
    );
    assert.equal(h.nanText, hidden, JSON.stringify(h));
    assert.equal(h.nanSince, 2);
    assert.equal(h.loss, undefined, "the Trainer's stand-in loss of 0 is not shown as the run's loss");
    await vscode.waitForNotification(
      /hfnan .*completed at step \d+, but not cleanly: the loss is hidden by logging_nan_inf_filter/,
      60_000,
    );
    // The dashboard's badge: not the green "completed".
    const badge = await (await vscode.webviewFrame(dashboardOf(h.runId, 'header()'))).locator('#run-status');
    assert.equal(await badge.getAttribute('data-status'), 'completed-nan');
    for (let attempt = 1; ; attempt++) {
      await vscode.runCommand('FSDP: Show NaN diagnostics');
      if (
        await vscode.pickQuickItem('hfnan', 10_000).then(
          () => true,
          () => false,
        )
      )
        break;
      if (attempt === 3) throw new Error('the run picker of "Show NaN diagnostics" closed three times');
    }
    const view = await vscode.inWebview<{ tag: string; step: string; summary: string; fixes: string }>(
      `document.getElementById('where-tag') ? { tag: document.getElementById('where-tag').textContent, step: document.getElementById('where-step').textContent, summary: document.querySelector('.where .summary')?.textContent ?? '', fixes: document.querySelector('.fixes')?.textContent ?? '' } : undefined`,
      60_000,
    );
    assert.equal(view.tag, 'printed/grad_norm');
    assert.equal(view.step, '2');
    assert.equal(view.summary, hidden);
    for (const arg of ['max_grad_norm', 'learning_rate', 'warmup_ratio', 'bf16=True', 'logging_nan_inf_filter=False'])
      assert.ok(view.fixes.includes(arg), `the advice names ${arg}: ${view.fixes}`);
    await vscode.screenshotEditor('docs-nan-diagnostics-hf-hidden-loss');
  });

  it('a script that prints nothing the watch reads: the header says so, and what to add to the launch spec', async () => {
    writeFileSync(
      path.join(workspace, 'quiet.py'),
      'import time\nfor i in range(3):\n    print("working on it", flush=True)\n    time.sleep(0.2)\n',
    );
    writeFileSync(
      path.join(workspace, 'quiet.fsdp-launch.yaml'),
      `name: quiet\ncommand: ${JSON.stringify([VENV_PYTHON, 'quiet.py'])}\n`,
    );
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('quiet.fsdp-launch.yaml');
    const h = await until(
      'the quiet run to complete',
      header,
      (x) => x.status === 'completed' && x.runId.startsWith('quiet'),
      180_000,
    );
    assert.equal(h.step, undefined);
    assert.match(h.metricsNote ?? '', /^No metrics: FSDP Studio reads what it prints \(stdout and stderr\)/);
    assert.match(h.metricsNote ?? '', /metrics: \{pattern: /);
    assert.ok(await (await vscode.webviewFrame('window.fsdpDashboard')).locator('#run-metrics-note').isVisible());
    await vscode.screenshotEditor('docs-dashboard-no-metrics');
  });
});
