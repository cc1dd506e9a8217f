// Every run gets a liveness check, whoever started it: runs fsdp-train starts from a terminal
// (the supervisor leads a group of its own), runs refused before their first step, runs whose
// processes were killed outright, and a runtime killed by signal 9 (the kernel's out-of-memory
// killer, or something else) under a living fsdp-train, and a process the out-of-memory killer ends in
// a real memory cgroup. Real CLI, real native trainer, real signals.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { LocalMachine } from '../../runs/machines/local-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { LoopbackSshd } from '../harness/sshd';
import { runtimeAmong, smallConfig, startTrain, tempDir, writeConfig } from '../native/train-runs';
import { until } from '../harness/until';
import { underOwner } from '../harness/run-owner-argv';

function manifestOf(runDir: string): RunManifest | undefined {
  const file = path.join(runDir, 'run.json');
  if (!existsSync(file)) return undefined;
  const parsed = parseRunManifest(readFileSync(file, 'utf8'));
  return 'manifest' in parsed ? parsed.manifest : undefined;
}

/** A memory cgroup (v1) under this process's own, or why one cannot be made here (as test/native/hardening-memory.test.ts makes it). */
function memoryCgroup(limitBytes: number): { dir: string } | { skip: string } {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (!line) return { skip: 'no cgroup v1 memory controller on this machine (cgroup v2 or none)' };
  const dir = path.join('/sys/fs/cgroup/memory', line.split(':')[2], `fsdp-oom-test-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    return { dir };
  } catch (e) {
    return {
      skip: `cannot create a memory cgroup here (${(e as Error).message}): needs root and a writable cgroup hierarchy`,
    };
  }
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
    const config = writeConfig(tmp, {
      ...smallConfig(),
      data: { ...(smallConfig().data as object), train: path.join(tmp, 'missing.tok') },
    });
    const runDir = path.join(tmp, 'runs', 'refused');
    const { done } = startTrain([config, '--run-dir', runDir]);
    const result = await done;
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /missing\.tok/);
    const w = watch(runDir);
    await w.start();
    assert.equal(w.status(), 'failed');
    assert.match(w.endReason() ?? '', /refused the config before the first step \(exit 2\)/);
    await until(
      'the watch to stop following',
      () => w.connection.state === 'closed' && w.vanished !== undefined,
      20_000,
    );
  });

  it("a resumed run whose trainer died before its first line is failed, though the log still ends with the last run's run_end", async () => {
    const config = writeConfig(
      tmp,
      smallConfig({ training: { max_steps: 4 }, checkpointing: { save_every_n_steps: 2 } }),
    );
    const runDir = path.join(tmp, 'runs', 'relaunched');
    assert.equal((await startTrain([config, '--run-dir', runDir]).done).code, 0);
    const previous = manifestOf(runDir)!;
    // The launch rewrites run.json ("starting", its own pid), then its process is killed at once
    // (SIGKILL: no line written), as a stop's late SIGKILL once did to a resume.
    const started = await local.start({
      runDir,
      manifest: { ...previous, status: 'starting', updated: Date.now() / 1000 },
      argv: underOwner(runDir, ['sleep', '600'], 'native'),
      cwd: tmp,
    });
    await until('run.json rewritten by the launch', () => manifestOf(runDir)?.pgid === started.pgid, 10_000);
    await local.signal(started.pgid, 'SIGKILL');
    const w = watch(runDir);
    await w.start();
    await until('the relaunched run to be failed', () => w.status() === 'failed', 20_000).catch((e: Error) => {
      throw new Error(
        `${e.message}: ${w.status()}, ${w.endReason()}, following: ${w.connection.state}, run.json ${JSON.stringify(manifestOf(runDir))?.slice(0, 200)}`,
        { cause: e },
      );
    });
    assert.match(w.endReason() ?? '', /ended without reporting the end of the run/);
  });

  it('a run resumed from this window is "starting", not "stopped", before run.json and its first lines say so', async () => {
    const runDir = path.join(tmp, 'runs', 'resumed');
    mkdirSync(runDir, { recursive: true });
    const t = Date.now() / 1000 - 60;
    const line = (e: object) => `${JSON.stringify({ v: 1, ...e })}\n`;
    writeFileSync(
      path.join(runDir, 'metrics.jsonl'),
      line({ type: 'run_start', time: t, run_id: 'resumed', config: {}, world: { size: 1, ranks: [] } }) +
        line({ type: 'run_end', time: t + 5, status: 'stopped', step: 3 }),
    );
    writeFileSync(
      path.join(runDir, 'run.json'),
      JSON.stringify({
        v: 1,
        run_id: 'resumed',
        name: 'resumed',
        created: t,
        updated: t + 5,
        status: 'stopped',
        config: {},
        world: { size: 1 },
        host: os.hostname(),
        target: 'local',
      }),
    );
    const w = watch(runDir);
    await w.start();
    await until('the stop read', () => w.status() === 'stopped', 10_000);
    await until('the watch to let go', () => w.connection.state === 'closed', 10_000);
    await w.followResume(Date.now() / 1000);
    assert.equal(w.status(), 'starting', 'Resume pressed: run.json still says stopped, the run is starting');
    writeFileSync(
      path.join(runDir, 'metrics.jsonl'),
      line({
        type: 'run_start',
        time: Date.now() / 1000,
        run_id: 'resumed',
        config: {},
        world: { size: 1, ranks: [] },
        start_step: 3,
      }),
      { flag: 'a' },
    );
    await until('the new start read', () => w.status() === 'running', 10_000);
  });

  it("quotes only this attempt's stderr: what an earlier attempt said (a Stop's words) is not this one's last words", async () => {
    const runDir = path.join(tmp, 'runs', 'attempts');
    mkdirSync(runDir, { recursive: true });
    writeFileSync(path.join(runDir, 'stderr.log'), 'fsdp-train: stopping at step 5 (SIGTERM)\n');
    const manifest: RunManifest = {
      v: 1,
      run_id: 'attempts',
      name: 'attempts',
      created: Date.now() / 1000,
      status: 'running',
      config: {},
      world: { size: 1 },
      host: os.hostname(),
      target: 'local',
      kind: 'command',
    };
    for (const [argv, said] of [
      [['sleep', '600'], undefined],
      [['sh', '-c', 'echo "loading shard 3 of 8" >&2; exec sleep 600'], 'loading shard 3 of 8'],
    ] as const) {
      const started = await local.start({ runDir, manifest, argv: underOwner(runDir, [...argv]), cwd: tmp });
      groups.push(started.pgid);
      await until('run.json written by the launch', () => manifestOf(runDir)?.pgid === started.pgid, 10_000);
      // The first attempt wrote nothing: both launches begin after the earlier words.
      assert.equal(
        manifestOf(runDir)?.output_from?.stderr,
        Buffer.byteLength('fsdp-train: stopping at step 5 (SIGTERM)\n'),
      );
      if (said)
        await until(
          'the new words',
          () => readFileSync(path.join(runDir, 'stderr.log'), 'utf8').includes(said),
          10_000,
        );
      const w = watch(runDir);
      await w.start();
      await local.signal(started.pgid, 'SIGKILL');
      await until('the run to be failed', () => w.vanished !== undefined, 30_000);
      assert.doesNotMatch(w.endReason() ?? '', /stopping at step 5/);
      if (said) assert.match(w.endReason() ?? '', /stderr\.log ends with: loading shard 3 of 8$/);
      else assert.doesNotMatch(w.endReason() ?? '', /stderr/);
    }
  });

  it('a run fsdp-train started from a terminal (its supervisor in a group of its own) whose processes are all killed is seen dead', async () => {
    const config = writeConfig(tmp, longConfig());
    const runDir = path.join(tmp, 'runs', 'killed');
    const { child } = startTrain([config, '--run-dir', runDir], undefined, { detached: true });
    groups.push(child.pid!);
    const w = watch(runDir);
    await until('run.json', () => existsSync(path.join(runDir, 'run.json')), 30_000);
    await w.start();
    await until('step 2', () => (w.history.lastStep ?? 0) >= 2, 60_000);
    // The supervisor names the runtime's processes a poll after the runtime's first events, which
    // the watch may read first: wait for them.
    await until(
      'the supervisor, fsdp-train and the runtime named in run.json',
      () => (manifestOf(runDir)?.pids ?? []).length >= 3,
      10_000,
    );
    const manifest = manifestOf(runDir);
    // The run's owner, the supervisor, leads a group of its own, apart from the terminal's.
    const pgid = manifest?.pgid;
    assert.ok(pgid !== undefined && pgid !== child.pid, `the supervisor's group: ${pgid}`);
    groups.push(pgid);
    process.kill(-pgid, 'SIGKILL');
    process.kill(-child.pid!, 'SIGKILL');
    await until('the run to be failed', () => w.status() === 'failed', 30_000);
    assert.match(w.endReason() ?? '', /ended without reporting the end of the run/);
    assert.doesNotMatch(
      w.endReason() ?? '',
      /memory/,
      'a small run on a big machine is not said to have run out of memory',
    );
    assert.equal(w.connection.state, 'closed');
  });

  it('a runtime killed by signal 9 under a living fsdp-train: failed, not blamed on memory (its plan and RSS far below the machine, both named), and the watch stops', async () => {
    const config = writeConfig(tmp, longConfig());
    const runDir = path.join(tmp, 'runs', 'oom');
    const { child, done } = startTrain([config, '--run-dir', runDir], undefined, { detached: true });
    groups.push(child.pid!);
    await until('run.json', () => existsSync(path.join(runDir, 'run.json')), 30_000);
    const w = watch(runDir);
    await w.start();
    await until('step 2', () => (w.history.lastStep ?? 0) >= 2, 60_000);
    // run.json names the runtime as soon as its supervisor has seen it start (a poll after run_start).
    const runtimeOf = () => runtimeAmong(manifestOf(runDir)?.pids ?? []);
    await until('run.json names the runtime', () => runtimeOf() !== undefined, 10_000);
    const runtimePid = runtimeOf()!;
    process.kill(runtimePid, 'SIGKILL');
    const result = await done;
    assert.equal(result.code, 128 + 9);
    await until('the run to be failed', () => w.vanished !== undefined, 30_000);
    assert.equal(w.status(), 'failed');
    const reason = w.endReason() ?? '';
    assert.match(reason, /signal 9 \(SIGKILL\)/);
    assert.match(
      reason,
      /not for want of memory \(the memory plan needs \d+(\.\d)? [KMG]iB; its ranks last held \(resident\) \d+(\.\d)? [KMG]iB; the machine has \d+(\.\d)? GiB\): something sent it SIGKILL/,
    );
    assert.doesNotMatch(reason, /may have run out of memory/);
    assert.equal(w.connection.state, 'closed', 'no "live" connection for a dead run');
    assert.equal(w.isLive(), false);
  });

  it("a process the kernel's out-of-memory killer ends in its memory cgroup (a real 64 MiB cgroup): the watch names the OOM killer from the cgroup's own count", async function () {
    const cg = memoryCgroup(64 * 1024 * 1024);
    if ('skip' in cg) {
      console.log(`      skipped: ${cg.skip}`);
      this.skip();
    }
    try {
      const runDir = path.join(tmp, 'runs', 'oom-killed');
      // Joins the cgroup, waits for the watch to see it there, then allocates until the kernel kills it.
      // The supervisor ($PPID, the run's group leader, whose cgroup the watch reads) joins it too.
      const script = `echo $PPID > ${cg.dir}/cgroup.procs && echo $$ > ${cg.dir}/cgroup.procs && touch ${runDir}/in-cgroup && sleep 3 && exec /usr/bin/python3 -c "a = []\nwhile True: a.append(bytearray(1 << 20))"`;
      const manifest: RunManifest = {
        v: 1,
        run_id: 'oom-killed',
        name: 'oom-killed',
        created: Date.now() / 1000,
        status: 'running',
        config: {},
        world: { size: 1 },
        host: os.hostname(),
        target: 'local',
        kind: 'command',
      };
      // Under the native supervisor: it writes only run.json's end ("killed by signal 9"), as for a
      // runtime killed without its run_end; the watch names the OOM killer from the cgroup's count.
      const started = await local.start({
        runDir,
        manifest,
        argv: underOwner(runDir, ['/bin/sh', '-c', script], 'native'),
        cwd: tmp,
      });
      groups.push(started.pgid);
      await until('the process in the cgroup', () => existsSync(path.join(runDir, 'in-cgroup')), 20_000);
      const w = watch(runDir);
      await w.start();
      await until('the run to be failed', () => w.vanished !== undefined, 60_000);
      assert.match(
        w.endReason() ?? '',
        /killed by signal 9 \(SIGKILL\); the kernel's out-of-memory killer ended it: its memory cgroup counted an OOM kill \(the cgroup's peak was 6\d\.\d MiB; its memory cgroup \(.*fsdp-oom-test-\d+\) has 64\.0 MiB\)/,
      );
    } finally {
      if (existsSync(cg.dir)) rmdirSync(cg.dir);
    }
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
      for (const machine of [local, ssh])
        assert.equal(await machine.processesAlive([sleeper.pid!], os.hostname()), false, machine.target);
    } finally {
      sleeper.kill('SIGKILL');
      await sshd.stop();
    }
  });
});
