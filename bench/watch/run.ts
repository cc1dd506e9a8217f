// `npm run bench:watch`: the watch path's numbers, measured in a real VS Code (code-server +
// Chromium) on this machine, written to bench/results/watch-<date>.{json,md} with the machine,
// its load, the date and the command.
//   1. event-to-chart latency: from the writer's timestamp of a step event to the dashboard's
//      loss chart having drawn it; locally (file watching) and over ssh (tail on a loopback sshd).
//   2. extension-host CPU while a run writes 100 step events per second, dashboard open.
//   3. dashboard frame time with 1M points: zoom/pan round trips (request → host downsamples →
//      webview draws) and uPlot's draw time.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { repoRoot } from '../../scripts/code-server';
import { VsCodeSession } from '../../test/e2e/harness/vscode-session';
import { descendants, LoopbackSshd } from '../../test/harness/sshd';
import { writeBigRun } from './big-run';

const SYNTHETIC = path.join(repoRoot, 'test', 'harness', 'synthetic-run.ts');
const BIG_STEPS = Number(process.env.BENCH_BIG_STEPS ?? 1_000_000);

interface FrameTiming {
  seq: number;
  lastStep: number | null;
  drawnAt: number;
  drawMs: number;
}

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function summary(values: number[]) {
  return {
    n: values.length,
    p50: round(percentile(values, 50)),
    p95: round(percentile(values, 95)),
    max: round(Math.max(...values)),
  };
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

function extensionHostPid(vscode: VsCodeSession): number {
  const pid = descendants(vscode.server.process.pid!).find((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('--type=extensionHost');
    } catch {
      return false;
    }
  });
  if (!pid) throw new Error('extension host process not found');
  return pid;
}

async function startSynthetic(machine: RunMachine, runDir: string, args: string[]): Promise<number> {
  const argv = [process.execPath, '--import', 'tsx', SYNTHETIC, '--run-dir', runDir, ...args];
  const run = await machine.start({
    runDir,
    argv,
    cwd: repoRoot,
    manifest: {
      v: 1,
      run_id: path.basename(runDir),
      name: path.basename(runDir),
      created: Date.now() / 1000,
      status: 'starting',
      config: {},
      world: { size: 1 },
      host: os.hostname(),
      target: machine.target,
    },
  });
  return run.pgid;
}

/** Write time (ms) of each step event, from metrics.jsonl. */
function writeTimes(metricsFile: string): Map<number, number> {
  const times = new Map<number, number>();
  for (const line of readFileSync(metricsFile, 'utf8').split('\n')) {
    if (!line.includes('"type":"step"')) continue;
    const e = JSON.parse(line) as { step: number; time: number };
    times.set(e.step, e.time * 1000);
  }
  return times;
}

/**
 * For each step written while the dashboard was already showing the run, the first drawn frame
 * that shows it, minus when it was written. (Steps written before the dashboard opened measure
 * the attach, not the latency.)
 */
function latencies(times: Map<number, number>, frames: FrameTiming[]): number[] {
  const out: number[] = [];
  const sorted = frames.filter((f) => f.lastStep !== null).sort((a, b) => a.drawnAt - b.drawnAt);
  const watching = sorted[0]?.drawnAt ?? Infinity;
  for (const [step, written] of times) {
    if (written <= watching) continue;
    const shown = sorted.find((f) => (f.lastStep as number) >= step);
    if (shown) out.push(shown.drawnAt - written);
  }
  return out;
}

async function attachLocal(vscode: VsCodeSession, runId: string): Promise<void> {
  await vscode.runCommand('FSDP: Attach to run');
  await vscode.pickQuickItem(runId);
}

/** The dashboard of run `runId` (other dashboards' webviews may still be loaded). */
function dashboardOf(runId: string, expression: string): string {
  return `window.fsdpDashboard?.header()?.runId === ${JSON.stringify(runId)} ? window.fsdpDashboard.${expression} : undefined`;
}

async function timings(vscode: VsCodeSession, runId: string): Promise<FrameTiming[]> {
  return vscode.inWebview<FrameTiming[]>(dashboardOf(runId, 'timings()'));
}

async function waitForStep(vscode: VsCodeSession, runId: string, step: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await vscode.inWebview<number>(dashboardOf(runId, 'header().step ?? -1'), timeoutMs)) < step) {
    if (Date.now() > deadline) throw new Error(`the dashboard did not reach step ${step}`);
    await vscode.page.waitForTimeout(500);
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const load0 = os.loadavg();
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-bench-ws-'));
  const remoteBase = mkdtempSync(path.join(os.tmpdir(), 'fsdp-bench-remote-'));
  const sshd = await LoopbackSshd.start();
  const local = new LocalMachine();
  const ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
  const groups: Array<[RunMachine, number]> = [];
  const vscode = await VsCodeSession.open({
    workspace,
    settings: {
      'fsdp.ssh.configFile': sshd.clientConfig,
      'fsdp.ssh.hosts': [sshd.alias],
      'fsdp.remote.directory': remoteBase,
    },
  });
  const results: Record<string, unknown> = {};
  try {
    // 1a. Latency, local: 10 steps/s for 30 s.
    const localDir = path.join(workspace, 'runs', 'latency-local');
    groups.push([local, await startSynthetic(local, localDir, ['--steps', '300', '--rate', '10'])]);
    await attachLocal(vscode, 'latency-local');
    await waitForStep(vscode, 'latency-local', 300, 120_000);
    results.latencyLocalMs = summary(
      latencies(writeTimes(path.join(localDir, 'metrics.jsonl')), await timings(vscode, 'latency-local')),
    );
    console.log('latency local', results.latencyLocalMs);

    // 2. Extension-host CPU: idle with a dashboard open, then while a run writes 100 events/s.
    const host = extensionHostPid(vscode);
    const idle0 = cpuSeconds(host);
    await vscode.page.waitForTimeout(20_000);
    const idleCpu = ((cpuSeconds(host) - idle0) / 20) * 100;
    const cpuDir = path.join(workspace, 'runs', 'cpu-100hz');
    groups.push([
      local,
      await startSynthetic(local, cpuDir, ['--steps', '6000', '--rate', '100', '--every-ckpt', '1000']),
    ]);
    await attachLocal(vscode, 'cpu-100hz');
    await waitForStep(vscode, 'cpu-100hz', 500, 60_000); // past the catch-up, in the steady state
    const t0 = Date.now();
    const c0 = cpuSeconds(host);
    await vscode.page.waitForTimeout(30_000);
    const seconds = (Date.now() - t0) / 1000;
    const busyCpu = ((cpuSeconds(host) - c0) / seconds) * 100;
    const frames = (await timings(vscode, 'cpu-100hz')).filter((f) => f.drawnAt >= t0);
    results.extensionHostCpu = {
      eventsPerSecond: 100,
      seconds: round(seconds),
      cpuPercentOfOneCore: round(busyCpu),
      idleCpuPercentOfOneCore: round(idleCpu),
      dashboardFramesPerSecond: round(frames.length / seconds),
      rssMiB: rssMiB(host),
    };
    console.log('cpu', results.extensionHostCpu);
    for (const [m, g] of groups.splice(0)) await m.signal(g, 'SIGKILL');

    // 1b. Latency over ssh: the run on the loopback host, attached by browsing the host's runs.
    const sshDir = path.join(remoteBase, 'runs', 'latency-ssh');
    groups.push([ssh, await startSynthetic(ssh, sshDir, ['--steps', '300', '--rate', '10'])]);
    await vscode.runCommand('FSDP: Attach to run');
    await vscode.pickQuickItem('Runs on an SSH host');
    await vscode.pickQuickItem(sshd.alias);
    await vscode.pickQuickItem('latency-ssh', 60_000);
    await waitForStep(vscode, 'latency-ssh', 300, 120_000);
    results.latencySshMs = summary(
      latencies(writeTimes(path.join(sshDir, 'metrics.jsonl')), await timings(vscode, 'latency-ssh')),
    );
    console.log('latency ssh', results.latencySshMs);

    // 3. A million points: load, then zoom and pan round trips.
    const bigDir = path.join(workspace, 'runs', 'big-1m');
    const g0 = Date.now();
    await writeBigRun(bigDir, BIG_STEPS);
    const generateS = (Date.now() - g0) / 1000;
    const a0 = Date.now();
    await attachLocal(vscode, 'big-1m');
    await waitForStep(vscode, 'big-1m', BIG_STEPS, 10 * 60_000);
    const loadS = (Date.now() - a0) / 1000;
    const zooms: Array<{ roundTripMs: number; drawMs: number; points: number }> = [];
    const zoom = async (min: number, max: number) =>
      zooms.push(await vscode.inWebview(dashboardOf('big-1m', `zoom(${JSON.stringify({ min, max })})`), 60_000));
    await vscode.inWebview(dashboardOf('big-1m', 'zoom(null)'), 60_000);
    for (let i = 0; i < 3; i++) {
      zooms.push(await vscode.inWebview(dashboardOf('big-1m', 'zoom(null)'), 60_000)); // whole run
      for (let span = BIG_STEPS / 2; span >= 1000; span /= 4)
        await zoom(BIG_STEPS / 2 - span / 2, BIG_STEPS / 2 + span / 2);
      for (let k = 0; k < 5; k++) await zoom(100_000 * k, 100_000 * k + 200_000); // pans
    }
    results.frames1M = {
      steps: BIG_STEPS,
      fileMiB: Math.round(Number(readFileSync(path.join(bigDir, 'metrics.jsonl')).length) / 2 ** 20),
      generateSeconds: round(generateS),
      attachToFullHistorySeconds: round(loadS),
      zoomRoundTripMs: summary(zooms.map((z) => z.roundTripMs)),
      uplotDrawMs: summary(zooms.map((z) => z.drawMs)),
      pointsDrawnPerChartMax: Math.max(...zooms.map((z) => z.points)),
      extensionHostRssMiB: rssMiB(host),
    };
    console.log('1M', results.frames1M);
    await vscode.screenshot('bench-1m-points');
  } finally {
    for (const [m, g] of groups) await m.signal(g, 'SIGKILL').catch(() => undefined);
    await vscode.close();
    await sshd.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(remoteBase, { recursive: true, force: true });
  }
  const report = {
    benchmark: 'watch',
    command: 'npm run bench:watch',
    date: started.toISOString(),
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      memoryGiB: round(os.totalmem() / 2 ** 30),
      node: process.version,
      kernel: os.release(),
      chromium: execFileSync('/usr/bin/chromium', ['--version'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim(),
      loadAverage1mAtStart: round(load0[0]),
      loadAverage1mAtEnd: round(os.loadavg()[0]),
      note: "a 2-core machine shared with other engineers' builds and tests; the load average says how busy it was",
    },
    results,
  };
  mkdirSync(path.join(repoRoot, 'bench', 'results'), { recursive: true });
  const stem = path.join(repoRoot, 'bench', 'results', `watch-${started.toISOString().slice(0, 10)}`);
  writeFileSync(`${stem}.json`, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`wrote ${stem}.json`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
