// `npm run bench:watch:tensorboard`: event-to-chart latency of a TensorBoard-logged run, measured as
// `npm run bench:watch` measures native runs: a writer appends train/loss and train/learning_rate
// records to an event file at 10 steps/s (as a SummaryWriter does), the run's log folder is attached
// in a real VS Code (code-server + Chromium), and for each step written while the dashboard showed
// the run, the first drawn frame that has it minus the record's wall time; on this machine (file
// watching) and over ssh (tail on a loopback sshd). Results in bench/results/watch-tensorboard-<date>.json.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tensorBoardDecoder } from '../../runs/watch/decoders/tensorboard/tensorboard-decoder';
import { repoRoot } from '../../scripts/code-server';
import { VsCodeSession } from '../../test/e2e/harness/vscode-session';
import { LoopbackSshd } from '../../test/harness/sshd';

const WRITER = path.join(repoRoot, 'test', 'harness', 'tensorboard-file.ts');
const STEPS = 300;
const RATE = 10;

interface FrameTiming {
  lastStep: number | null;
  drawnAt: number;
}

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function summary(values: number[]) {
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    n: values.length,
    p50: round(percentile(values, 50)),
    p95: round(percentile(values, 95)),
    max: round(Math.max(...values)),
  };
}

/** Wall time (ms) of each step's train/loss record, read back from the event file. */
function writeTimes(dir: string): Map<number, number> {
  const file = path.join(
    dir,
    readdirSync(dir).find((n) => n.startsWith('events.out.tfevents.'))!,
  );
  const times = new Map<number, number>();
  for (const s of tensorBoardDecoder()(0).push(readFileSync(file)).entries)
    if (s.tag === 'train/loss') times.set(s.step, s.wallTime * 1000);
  return times;
}

/** For each step written after the dashboard first drew the run, the first frame showing it minus its write time. */
function latencies(times: Map<number, number>, frames: FrameTiming[]): number[] {
  const sorted = frames.filter((f) => f.lastStep !== null).sort((a, b) => a.drawnAt - b.drawnAt);
  const watching = sorted[0]?.drawnAt ?? Infinity;
  const out: number[] = [];
  for (const [step, written] of times) {
    if (written <= watching) continue;
    const shown = sorted.find((f) => (f.lastStep as number) >= step);
    if (shown) out.push(shown.drawnAt - written);
  }
  return out;
}

function startWriter(dir: string): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', WRITER, '--dir', dir, '--steps', String(STEPS), '--rate', String(RATE)],
    { stdio: 'ignore' },
  );
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function measure(
  vscode: VsCodeSession,
  dir: string,
  attach: () => Promise<void>,
): Promise<ReturnType<typeof summary>> {
  const runId = path.basename(dir);
  const done = startWriter(dir);
  await new Promise((r) => setTimeout(r, 1500)); // the file exists before the folder is attached
  await attach();
  const expr = (e: string) =>
    `window.fsdpDashboard?.header()?.runId === ${JSON.stringify(runId)} ? window.fsdpDashboard.${e} : undefined`;
  await done;
  for (let i = 0; i < 120 && (await vscode.inWebview<number>(expr('header().step ?? -1'), 60_000)) < STEPS; i++)
    await vscode.page.waitForTimeout(500);
  return summary(latencies(writeTimes(dir), await vscode.inWebview<FrameTiming[]>(expr('timings()'))));
}

async function main(): Promise<void> {
  const started = new Date();
  const load0 = os.loadavg();
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-bench-tb-'));
  const remote = mkdtempSync(path.join(os.tmpdir(), 'fsdp-bench-tb-remote-'));
  const sshd = await LoopbackSshd.start();
  const vscode = await VsCodeSession.open({
    workspace,
    settings: { 'fsdp.ssh.configFile': sshd.clientConfig, 'fsdp.ssh.hosts': [sshd.alias] },
  });
  const results: Record<string, unknown> = {};
  try {
    const localDir = path.join(workspace, 'tb', 'latency-local');
    mkdirSync(localDir, { recursive: true });
    results.latencyLocalMs = await measure(vscode, localDir, async () => {
      await vscode.runCommand('FSDP: Attach to run');
      await vscode.pickQuickItem('tb/latency-local');
    });
    console.log('latency local', results.latencyLocalMs);
    const sshDir = path.join(remote, 'logs', 'latency-ssh');
    mkdirSync(sshDir, { recursive: true });
    results.latencySshMs = await measure(vscode, sshDir, async () => {
      await vscode.runCommand('FSDP: Attach to run');
      await vscode.pickQuickItem('Runs on an SSH host');
      await vscode.pickQuickItem(sshd.alias);
      await vscode.pickQuickItem('TensorBoard log folders under a folder', 60_000);
      await vscode.typeIntoQuickInput(remote);
      await vscode.pickQuickItem('latency-ssh', 60_000);
    });
    console.log('latency ssh', results.latencySshMs);
  } finally {
    await vscode.close();
    await sshd.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(remote, { recursive: true, force: true });
  }
  const report = {
    benchmark: 'watch-tensorboard',
    command: 'npm run bench:watch:tensorboard',
    date: started.toISOString(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim(),
    what: `event-to-chart latency (ms) of a TensorBoard event file written at ${RATE} steps/s (${STEPS} steps), from each train/loss record's wall time to the first dashboard frame drawn with it`,
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
      loadAverage1mAtStart: Math.round(load0[0] * 10) / 10,
      loadAverage1mAtEnd: Math.round(os.loadavg()[0] * 10) / 10,
      note: "a 2-core machine shared with other engineers' builds and tests; the load average says how busy it was",
    },
    results,
  };
  mkdirSync(path.join(repoRoot, 'bench', 'results'), { recursive: true });
  const file = path.join(repoRoot, 'bench', 'results', `watch-tensorboard-${started.toISOString().slice(0, 10)}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`wrote ${file}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
