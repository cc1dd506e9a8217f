// Every run gets a liveness check, whoever started it: runs fsdp-train starts from a terminal
// (run.json names pids but no process group), runs refused before their first step, runs whose
// processes were killed outright, and a runtime killed by signal 9 (the kernel's out-of-memory
// killer) under a living fsdp-train. Real CLI, real native trainer, real signals.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { LocalMachine } from '../../runs/machines/local-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { LoopbackSshd } from '../harness/sshd';
import { smallConfig, startTrain, tempDir, writeConfig } from '../native/train-runs';
import { until } from '../harness/until';

function manifestOf(runDir: string): RunManifest | undefined {
  const file = path.join(runDir, 'run.json');
  if (!existsSync(file)) return undefined;
  const parsed = parseRunManifest(readFileSync(file, 'utf8'));
  return 'manifest' in parsed ? parsed.manifest : undefined;
}

/** A config that trains for long enough to be killed mid-run. */
function longConfig(): Record<string, unknown> {
  return smallConfig({ training: { max_steps: 100_000 }, logging: { eval_every_n_steps: 0 } });
}

describe('liveness of runs the editor did not launch (real fsdp-train)', function () {
  this.timeout(120_000);
  const local = new LocalMachine();
  let tmp: string;
  const watches: RunWatch[] = [];
  const groups: number[] = [];
  const watch = (runDir: string) => {
    const w = new RunWatch({ target: 'local', runDir }, local);
    watches.push(w);
    return w;
  };

  beforeEach(() => {
    tmp = tempDir('liveness');
  });
  afterEach(async () => {
    for (const w of watches.splice(0)) w.dispose();
    for (const g of groups.splice(0)) await local.signal(g, 'SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  });

  it('a run refused before its first step (exit 2) is failed, with the reason, not "starting" forever', async () => {
    const config = writeConfig(tmp, { ...smallConfig(), data: { ...(smallConfig().data as object), train: path.join(tmp, 'missing.tok') } });
    const runDir = path.join(tmp, 'runs', 'refused');
    const { done } = startTrain([config, '--run-dir', runDir]);
    const result = await done;
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /missing\.tok/);
    const w = watch(runDir);
    await w.start();
    assert.equal(w.status(), 'failed');
    assert.match(w.endReason() ?? '', /refused the config before the first step \(exit 2\)/);
    await until('the watch to stop following', () => w.connection.state === 'closed' && w.vanished !== undefined, 20_000);
  });

  it('a resumed run whose trainer died before its first line is failed, though the log still ends with the last run\'s run_end', async () => {
    const config = writeConfig(tmp, smallConfig({ training: { max_steps: 4 }, checkpointing: { save_every_n_steps: 2 } }));
    const runDir = path.join(tmp, 'runs', 'relaunched');
    assert.equal((await startTrain([config, '--run-dir', runDir]).done).code, 0);
    const previous = manifestOf(runDir)!;
    // The launch rewrites run.json ("starting", its own pid), then its process is killed at once
    // (SIGKILL: no line written), as a stop's late SIGKILL once did to a resume.
    const started = await local.start({ runDir, manifest: { ...previous, status: 'starting', updated: Date.now() / 1000 }, argv: ['sleep', '600'], cwd: tmp });
    await until('run.json rewritten by the launch', () => manifestOf(runDir)?.pgid === started.pgid, 10_000);
    await local.signal(started.pgid, 'SIGKILL');
    const w = watch(runDir);
    await w.start();
    await until('the relaunched run to be failed', () => w.status() === 'failed', 20_000).catch((e: Error) => {
      throw new Error(`${e.message}: ${w.status()}, ${w.endReason()}, following: ${w.connection.state}, run.json ${JSON.stringify(manifestOf(runDir))?.slice(0, 200)}`, { cause: e });
    });
    assert.match(w.endReason() ?? '', /ended without reporting the end of the run/);
  });

  it('a run fsdp-train started from a terminal (pids, no process group) whose processes are all killed is seen dead', async () => {
    const config = writeConfig(tmp, longConfig());
    const runDir = path.join(tmp, 'runs', 'killed');
    const { child } = startTrain([config, '--run-dir', runDir], undefined, { detached: true });
    groups.push(child.pid!);
    const w = watch(runDir);
    await until('run.json', () => existsSync(path.join(runDir, 'run.json')), 30_000);
    await w.start();
    await until('step 2', () => (w.history.lastStep ?? 0) >= 2, 60_000);
    const manifest = manifestOf(runDir);
    assert.equal(manifest?.pgid, undefined, 'a terminal run has no process group in run.json');
    assert.ok((manifest?.pids ?? []).length >= 2, 'fsdp-train and the runtime are named');
    process.kill(-child.pid!, 'SIGKILL');
    await until('the run to be failed', () => w.status() === 'failed', 30_000);
    assert.match(w.endReason() ?? '', /ended without reporting the end of the run/);
    assert.match(w.endReason() ?? '', /if the system ran out of memory: the memory plan needs .*; the machine has/);
    assert.equal(w.connection.state, 'closed');
  });

  it('a runtime killed by signal 9 under a living fsdp-train: failed, "may have run out of memory" with the plan beside the machine, and the watch stops', async () => {
    const config = writeConfig(tmp, longConfig());
    const runDir = path.join(tmp, 'runs', 'oom');
    const { child, done } = startTrain([config, '--run-dir', runDir], undefined, { detached: true });
    groups.push(child.pid!);
    await until('run.json', () => existsSync(path.join(runDir, 'run.json')), 30_000);
    const w = watch(runDir);
    await w.start();
    await until('step 2', () => (w.history.lastStep ?? 0) >= 2, 60_000);
    const runtimePid = manifestOf(runDir)!.pids!.find((p) => p !== child.pid)!;
    process.kill(runtimePid, 'SIGKILL');
    const result = await done;
    assert.equal(result.code, 128 + 9);
    await until('the run to be failed', () => w.vanished !== undefined, 30_000);
    assert.equal(w.status(), 'failed');
    const reason = w.endReason() ?? '';
    assert.match(reason, /signal 9 \(SIGKILL\)/);
    assert.match(reason, /may have run out of memory/);
    assert.match(reason, /the memory plan needs \d+(\.\d)? [KMG]iB; the machine has \d+(\.\d)? GiB/);
    assert.equal(w.connection.state, 'closed', 'no "live" connection for a dead run');
    assert.equal(w.isLive(), false);
  });

  it('tells whether pids live on the host run.json names, here and over ssh, and does not guess on another host', async () => {
    const sshd = await LoopbackSshd.start();
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
      for (const machine of [local, ssh]) {
        assert.equal(await machine.processesAlive([999_999_999, sleeper.pid!], os.hostname()), true, machine.target);
        assert.equal(await machine.processesAlive([sleeper.pid!], 'another-node'), undefined, machine.target);
      }
      sleeper.kill('SIGKILL');
      await until('sleep to end', () => sleeper.exitCode !== null || sleeper.signalCode !== null, 10_000);
      for (const machine of [local, ssh]) assert.equal(await machine.processesAlive([sleeper.pid!], os.hostname()), false, machine.target);
    } finally {
      sleeper.kill('SIGKILL');
      await sshd.stop();
    }
  });
});
