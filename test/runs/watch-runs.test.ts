// The watch layer against real processes and a real sshd on 127.0.0.1: runs started detached in
// their own session, followed from byte offsets, stopped by process group, resumed, and watched
// through ssh connections that are cut mid-run — every step arrives exactly once.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { underOwner } from '../harness/run-owner-argv';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { ConnectionState, RunMachine } from '../../runs/machines/run-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { LoopbackSshd } from '../harness/sshd';
import { syntheticLoss } from '../harness/synthetic-run';
import { until as untilHeld } from '../harness/until';

const SYNTHETIC = path.join(repoRoot, 'test', 'harness', 'synthetic-run.ts');

function manifestFor(runDir: string, target: string): RunManifest {
  return {
    v: 1,
    run_id: path.basename(runDir).replace(/[^A-Za-z0-9._-]/g, '_'),
    created: Date.now() / 1000,
    status: 'starting',
    config: {},
    world: { size: 1 },
    host: os.hostname(),
    target,
  };
}

async function startSynthetic(machine: RunMachine, runDir: string, args: string[]) {
  // Under the run's owner, as every run starts: the synthetic run is its "runtime" (events only).
  const argv = underOwner(
    runDir,
    [process.execPath, '--import', 'tsx', SYNTHETIC, '--run-dir', runDir, ...args],
    'native',
  );
  return machine.start({ runDir, manifest: manifestFor(runDir, machine.target), argv, cwd: repoRoot });
}

/** Steps the run has written so far, whole lines only (read from its file directly, not through a watch). */
function stepsWritten(runDir: string): number {
  try {
    return readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .slice(0, -1)
      .filter((l) => l.includes('"type":"step"')).length;
  } catch {
    return 0;
  }
}

function stepsOf(watch: RunWatch): number[] {
  return [...watch.history.step.loss.steps];
}

function assertEveryStepOnce(watch: RunWatch, n: number): void {
  assert.deepEqual(
    stepsOf(watch),
    Array.from({ length: n }, (_, i) => i + 1),
  );
  const values = watch.history.step.loss.values;
  for (let i = 0; i < n; i++) assert.equal(values[i], syntheticLoss(i + 1), `loss of step ${i + 1}`);
}

const until = (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000) =>
  untilHeld(what, cond, timeoutMs);

/** Session id of a process, from /proc: the detached run leads its own session. */
function sessionOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
}

describe('watching runs (real processes, real sshd on 127.0.0.1)', function () {
  this.timeout(120_000);
  let tmp: string;
  const watches: RunWatch[] = [];
  const watch = (machine: RunMachine, runDir: string) => {
    const w = new RunWatch({ target: machine.target, runDir }, machine);
    watches.push(w);
    return w;
  };

  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-watch-'));
  });
  afterEach(() => {
    for (const w of watches.splice(0)) w.dispose();
    rmSync(tmp, { recursive: true, force: true });
  });

  describe('on this machine', () => {
    const local = new LocalMachine();

    it('starts a run in its own session, records pid and process group in run.json, and reads every step once', async () => {
      const runDir = path.join(tmp, 'runs', 'r1');
      const started = await startSynthetic(local, runDir, ['--steps', '60', '--rate', '200']);
      assert.equal(sessionOf(started.pid), started.pid, 'the run leads its own session');
      const w = watch(local, runDir);
      await w.start();
      await until('run_end', () => !!w.history.end);
      assertEveryStepOnce(w, 60);
      // run.json follows the events a poll of its owner later.
      await until('run.json completed', async () => {
        await w.refreshManifest();
        return w.manifest?.status === 'completed';
      });
      assert.equal(w.manifest?.pgid, started.pgid);
      assert.equal(w.manifest?.pids?.[0], started.pid, "the run's owner first");
      assert.equal(w.status(), 'completed');
    });

    it('stops a run through its process group, then a resume continues with each step once', async () => {
      const runDir = path.join(tmp, 'runs', 'r2');
      const started = await startSynthetic(local, runDir, ['--steps', '100', '--rate', '100', '--every-ckpt', '10']);
      const w = watch(local, runDir);
      await w.start();
      await until('step 35', () => (w.history.lastStep ?? 0) >= 35);
      await local.signal(started.pgid, 'SIGTERM');
      await until('run_end', () => !!w.history.end);
      assert.equal(w.status(), 'stopped');
      const stoppedAt = w.history.lastStep!;
      await until('process group gone', async () => !(await local.isAlive(started.pgid)));
      await startSynthetic(local, runDir, ['--steps', '100', '--rate', '400', '--every-ckpt', '10', '--resume']);
      w.follow();
      await until('resumed run_end', () => w.history.end?.status === 'completed');
      assert.ok(stoppedAt > 30);
      assertEveryStepOnce(w, 100);
    });

    it("a relaunch followed while the last run's end is still being settled (run.json read before it, told after) is followed to its own end", async () => {
      // The window, held open: the watch reads run.json after reading an end (followToTheEnd); here
      // that read is held, and then told what run.json said before the relaunch ("stopped"), as a read
      // made before it and slow to return (over ssh, under load) tells it.
      let held: { until: Promise<void>; said?: RunManifest } | undefined;
      class HeldManifestMachine extends LocalMachine {
        override async readManifest(runDir: string): Promise<RunManifest | undefined> {
          const h = held;
          if (!h) return super.readManifest(runDir);
          await h.until;
          return h.said;
        }
      }
      const machine = new HeldManifestMachine(); // the watch's; the run is started and stopped through `local`
      const runDir = path.join(tmp, 'runs', 'r-held');
      const started = await startSynthetic(local, runDir, ['--steps', '100', '--rate', '100', '--every-ckpt', '10']);
      const w = watch(machine, runDir);
      await w.start();
      await until('step 35', () => (w.history.lastStep ?? 0) >= 35);
      let release = () => {};
      const h: { until: Promise<void>; said?: RunManifest } = { until: new Promise<void>((r) => (release = r)) };
      held = h;
      await local.signal(started.pgid, 'SIGTERM');
      await until('run_end', () => !!w.history.end);
      await until('process group gone', async () => !(await local.isAlive(started.pgid)));
      h.said = await local.readManifest(runDir);
      assert.equal(h.said?.status, 'stopped');
      await startSynthetic(local, runDir, ['--steps', '100', '--rate', '400', '--every-ckpt', '10', '--resume']);
      w.follow();
      held = undefined;
      release();
      await until('resumed run_end', () => w.history.end?.status === 'completed', 60_000);
      assertEveryStepOnce(w, 100);
    });

    for (const byAttempt of [false, true])
      it(`a resume followed before the last run's end was read (Resume pressed at once) is followed on to its own end, ${byAttempt ? 'told by the attempt its owner named (the stream)' : 'told by the time asked (no owner named)'}`, async () => {
        const runDir = path.join(tmp, 'runs', byAttempt ? 'r5-attempt' : 'r5');
        await startSynthetic(local, runDir, ['--steps', '30', '--rate', '0', '--every-ckpt', '10']);
        const manifest = path.join(runDir, 'run.json');
        await until(
          'the first run to end',
          () =>
            existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as RunManifest).status === 'completed',
        );
        // As the editor does (showLaunched): ask, start the resume, then follow with the time asked.
        // The resumed trainer writes its first line a moment later (Node starting), so the watch
        // reads the old end first — and, until the resume's start script runs, the old run.json.
        const askedAt = Date.now() / 1000;
        const argv = [
          process.execPath,
          '--import',
          'tsx',
          SYNTHETIC,
          '--run-dir',
          runDir,
          '--steps',
          '50',
          '--rate',
          '0',
          '--every-ckpt',
          '10',
          '--resume',
        ];
        const resumed = await local.start({
          runDir,
          manifest: manifestFor(runDir, 'local'),
          argv: underOwner(runDir, argv, 'native'),
          cwd: repoRoot,
        });
        const w = watch(local, runDir);
        void w.start();
        if (byAttempt) {
          // As launchRun returns (untilOwned): once the resume's owner named itself, and its attempt, in run.json.
          await until(
            "the resume's owner in run.json",
            async () => (await local.readManifest(runDir))?.pids?.[0] === resumed.pid,
          );
          // Asked by a clock a minute ahead of the run's: the stream, not the time, says whose the ends are.
          void w.followResume(askedAt + 60, resumed.pid);
        } else void w.followResume(askedAt);
        await until(
          'the resumed run_end',
          () => w.history.lastStep === 50 && w.history.end?.status === 'completed',
          30_000,
        ).catch((e: Error) => {
          const files = readdirSync(runDir).map(
            (f) =>
              `${f}${f.endsWith('.log') || f === 'run.json' ? `: ${readFileSync(path.join(runDir, f), 'utf8').slice(-600)}` : ''}`,
          );
          throw new Error(
            `${e.message}: the watch is at step ${w.history.lastStep}, ${w.status()}; the folder: ${files.join('\n')}`,
            { cause: e },
          );
        });
        assertEveryStepOnce(w, 50);
        // The resume's own end is its end (by the clock asked a minute ahead, it would be the last run's: "starting").
        await until('the watch to say completed', () => w.status() === 'completed', 10_000);
      });

    it('a run.json its owner wrote a poll after the log\'s end (still "running") is not read as a resume; one a resume wrote is', async () => {
      const runDir = path.join(tmp, 'runs', 'behind');
      mkdirSync(runDir, { recursive: true });
      const rank = 4_000_001; // the attempt's runtime, as its run_start names it
      const t = Date.now() / 1000 - 10;
      const events = [
        {
          v: 1,
          type: 'run_start',
          time: t,
          run_id: 'behind',
          config: {},
          world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu', pid: rank }] },
        },
        {
          v: 1,
          type: 'step',
          time: t + 1,
          step: 1,
          loss: 2,
          lr: 1e-3,
          grad_norm: 1,
          tokens_per_s: 1,
          step_ms: 1,
          mem_peak: 1,
        },
        { v: 1, type: 'run_end', time: t + 2, status: 'completed', step: 1 },
      ];
      writeFileSync(path.join(runDir, 'metrics.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
      const writeManifest = (fields: Partial<RunManifest>) =>
        writeFileSync(path.join(runDir, 'run.json'), JSON.stringify({ ...manifestFor(runDir, 'local'), ...fields }));
      // The supervisor's step write landed after the runtime's run_end; its end write comes next.
      writeManifest({ status: 'running', step: 1, updated: t + 2.05, pids: [4_000_000, rank] });
      const w = watch(local, runDir);
      await w.start();
      await until('the end read', () => w.history.end !== undefined, 10_000);
      assert.equal(w.status(), 'completed');
      assert.equal(w.isLive(), false);
      // A resume's run.json names its own processes only: that one is a start, and the run live again.
      writeManifest({ status: 'starting', updated: t + 5, pids: [4_000_002] });
      await w.refreshManifest();
      assert.equal(w.isLive(), true);
    });

    it('a status that run.json alone changes is told to listeners, as one an event changes (the status bar redraws on them)', async () => {
      // Issue 39 item 5: a command's run (its run_start names no pids) read its run_end while its
      // owner's run.json still said "running"; the end's run.json came next and stopped the watch
      // without an event, so the status bar kept "running" beside a completed dashboard header.
      const runDir = path.join(tmp, 'runs', 'told');
      mkdirSync(runDir, { recursive: true });
      const t = Date.now() / 1000 - 10;
      const events = [
        { v: 1, type: 'run_start', time: t, run_id: 'told', config: {}, world: { size: 1, ranks: [] } },
        { v: 1, type: 'run_end', time: t + 2, status: 'completed', step: 0 },
      ];
      writeFileSync(path.join(runDir, 'metrics.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
      const writeManifest = (fields: Partial<RunManifest>) =>
        writeFileSync(path.join(runDir, 'run.json'), JSON.stringify({ ...manifestFor(runDir, 'local'), ...fields }));
      writeManifest({ status: 'running', updated: t + 2.05, pids: [4_000_010] });
      const w = watch(local, runDir);
      const told: string[] = [];
      w.onChange(() => told.push(w.status()));
      await w.start();
      await until('the end read', () => w.history.end !== undefined, 10_000);
      // The case this is about: run.json alone keeps the run "running" for now.
      assert.equal(w.status(), 'running');
      writeManifest({ status: 'completed', updated: t + 2.1, pids: [4_000_010] });
      await w.refreshManifest();
      assert.equal(w.status(), 'completed');
      assert.equal(told.at(-1), 'completed', `statuses told: ${told.join(', ')}`);
    });

    it('reports a run whose processes died without a run_end as failed', async () => {
      const runDir = path.join(tmp, 'runs', 'r3');
      const started = await startSynthetic(local, runDir, ['--steps', '1000', '--rate', '50']);
      const w = watch(local, runDir);
      await w.start();
      await until('step 5', () => (w.history.lastStep ?? 0) >= 5);
      await local.signal(started.pgid, 'SIGKILL');
      await until('vanished', () => w.status() === 'failed', 20_000);
      assert.match(w.endReason() ?? '', /ended without reporting the end of the run/);
    });
  });

  describe('over ssh', () => {
    let sshd: LoopbackSshd;
    let ssh: SshMachine;

    before(async () => {
      sshd = await LoopbackSshd.start();
      ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
    });
    after(async () => {
      await sshd?.stop();
    });

    it('launches on the host detached, survives cut connections, and delivers every step exactly once', async () => {
      // A run folder whose name a shell would love to misread.
      const runDir = path.join(tmp, `runs dir`, `it's a "run"; $(touch pwned) \`id\``);
      const started = await startSynthetic(ssh, runDir, ['--steps', '300', '--rate', '60']);
      // $! is known as soon as the remote shell forks; setsid runs in the child a moment later.
      await until('the remote run leads its own session', () => sessionOf(started.pid) === started.pid, 5000);
      const w = watch(ssh, runDir);
      const states: ConnectionState['state'][] = [];
      w.onChange(() => {
        if (states[states.length - 1] !== w.connection.state) states.push(w.connection.state);
      });
      await w.start();
      const reconnects = () => states.filter((s) => s === 'reconnecting').length;
      let cuts = 0;
      for (const at of [40, 110, 180]) {
        // The run is held at each cut's step until its watch has caught up and is connected: on a
        // loaded machine the run (5 s long) would otherwise end, and the watch let its files go,
        // before the watch had read that far, and there would be no connection left to cut. Its
        // whole process group is held: the run is its owner's child, and stopping the owner alone
        // (as this did) held nothing — the run ended under a cut (2 reconnects told for 3 cuts).
        await until(`step ${at} written`, () => stepsWritten(runDir) >= at);
        process.kill(-started.pgid, 'SIGSTOP');
        try {
          await until(
            `step ${at} read, connected`,
            () => (w.history.lastStep ?? 0) >= at && w.connection.state === 'live',
          );
          const before = reconnects();
          assert.ok(sshd.killConnections() > 0, 'there was a connection to cut');
          cuts++;
          // Each cut is told as a reconnect before the next one: two cuts never hit one connection.
          await until(`cut ${cuts} told as a reconnect`, () => reconnects() > before);
        } finally {
          process.kill(-started.pgid, 'SIGCONT');
        }
      }
      await until('run_end', () => !!w.history.end, 90_000);
      assert.equal(cuts, 3);
      assert.ok(reconnects() >= 3, `connection states: ${states.join(' → ')}`);
      assertEveryStepOnce(w, 300);
      assert.equal(w.problems.length, 0, JSON.stringify(w.problems));
      assert.ok(
        !existsSync(path.join(tmp, 'pwned')) && !existsSync(path.join(repoRoot, 'pwned')),
        'nothing in the path was executed',
      );
      assert.equal((await ssh.readManifest(runDir))?.pgid, started.pgid);
      // The run's owner writes run.json after the run_end the watch read: the folder is removed
      // (afterEach) only once every process of the run has ended, not while it still writes.
      await until('the run ended', async () => (await ssh.isAlive(started.pgid)) === false);
    });

    it('attaches to a finished remote run from the start and stops a live one by its group', async () => {
      const runDir = path.join(tmp, 'runs', 'remote-stop');
      const started = await startSynthetic(ssh, runDir, ['--steps', '10000', '--rate', '50']);
      const w = watch(ssh, runDir);
      await w.start();
      await until('step 10', () => (w.history.lastStep ?? 0) >= 10);
      assert.equal(await ssh.isAlive(started.pgid), true);
      await ssh.signal(started.pgid, 'SIGTERM');
      await until('run_end', () => !!w.history.end);
      assert.equal(w.status(), 'stopped');
      const again = watch(ssh, runDir);
      await again.start();
      await until('second watch read to the end', () => !!again.history.end);
      assert.deepEqual(stepsOf(again), stepsOf(w));
      assert.deepEqual(await ssh.listRunDirs(path.join(tmp, 'runs')), [runDir]);
    });

    it('refuses hostile host aliases before anything runs', async () => {
      const marker = path.join(tmp, 'alias-pwned');
      for (const alias of [`x; touch ${marker}`, `$(touch ${marker})`, '-oProxyCommand=touch /tmp/x', 'a b']) {
        const m = new SshMachine(alias, () => ({ configFile: sshd.clientConfig }));
        await assert.rejects(m.readManifest(tmp), /SSH host .* (has characters|starts with)/);
      }
      assert.ok(!existsSync(marker));
    });
  });
});
