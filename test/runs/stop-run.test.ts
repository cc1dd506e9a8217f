// Stop signals only what is the run's (issue 25): on real processes, a run.json that names a
// process group which is not the run's — group 1, the caller's own, an unrelated group, a group
// whose leader was replaced — makes Stop refuse and say why, and that group lives on. The run's
// own group is stopped, on this machine and over ssh.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { stopRun } from '../../runs/stop/stop-run';
import { LoopbackSshd } from '../harness/sshd';
import { until } from '../harness/until';
import { underOwner } from '../harness/run-owner-argv';

/** A run that stops on SIGTERM after a moment (as a trainer saving its checkpoint would). */
const TRAINER = ['/bin/sh', '-c', 'trap "sleep 0.2; exit 0" TERM; while :; do sleep 0.1; done'];
/** A trainer that ignores the graceful signal (a checkpoint that never ends). */
const DEAF_TRAINER = ['/bin/sh', '-c', 'trap "" TERM; while :; do sleep 0.1; done'];

function manifestOf(runDir: string): RunManifest {
  const parsed = parseRunManifest(readFileSync(path.join(runDir, 'run.json'), 'utf8'));
  if ('error' in parsed) throw new Error(parsed.error);
  return parsed.manifest;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("Stop signals only what is the run's (real processes)", function () {
  this.timeout(120_000);
  let tmp: string;
  const strangers: ChildProcess[] = [];
  const groups: number[] = [];
  const local = new LocalMachine();

  /**
   * A stranger that says which signals reach it: it echoes the name of each one a stop could send.
   * `signalsSeen()` sends it WINCH and waits for that echo: a signal sent before was pending by then
   * at the latest, and the shell runs pending traps in signal-number order (WINCH, 28, is after all
   * of them), and SIGKILL would end it silently. So what it returns is every signal it got, with no
   * sleep to guess how long delivery takes.
   */
  async function witness(): Promise<{ pgid: number; signalsSeen: () => Promise<string[]> }> {
    const child = spawn(
      '/bin/sh',
      [
        '-c',
        'for s in TERM INT HUP QUIT USR1 USR2 WINCH; do trap "echo $s" $s; done; echo ready; while :; do sleep 0.05; done',
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    strangers.push(child);
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    // Its traps are set once it says so; a signal before that would not be echoed.
    await until('the stranger to set its traps', () => /^ready$/m.test(out), 20_000);
    return {
      pgid: child.pid!,
      signalsSeen: async () => {
        process.kill(child.pid!, 'SIGWINCH');
        await until(
          'the stranger to echo WINCH',
          () => /^WINCH$/m.test(out) || child.exitCode !== null || child.signalCode !== null,
          20_000,
        );
        assert.equal(child.signalCode, null, `the stranger was killed by ${child.signalCode}`);
        return out.split('\n').filter((l) => l && l !== 'WINCH' && l !== 'ready');
      },
    };
  }

  /** A process group of someone else's: not started by FSDP Studio, no run mark. */
  function stranger(): number {
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    strangers.push(child);
    return child.pid!;
  }

  async function startRun(machine: RunMachine, runDir: string, command = TRAINER): Promise<RunManifest> {
    const runId = path.basename(runDir);
    const manifest: RunManifest = {
      v: 1,
      run_id: runId,
      created: Date.now() / 1000,
      status: 'running',
      config: {},
      world: { size: 1 },
      host: os.hostname(),
      target: machine.target,
      command,
    };
    const started = await machine.start({ runDir, manifest, argv: underOwner(runDir, command), cwd: tmp });
    groups.push(started.pgid);
    await until(
      'run.json names the group',
      () => {
        try {
          return manifestOf(runDir).pgid === started.pgid;
        } catch {
          return false;
        }
      },
      20_000,
    );
    return manifestOf(runDir);
  }

  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-stop-'));
  });
  afterEach(() => {
    for (const c of strangers.splice(0)) c.kill('SIGKILL');
    for (const g of groups.splice(0)) if (groupAlive(g)) process.kill(-g, 'SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  });

  it('run.json may not name process group 0, 1 or a negative one', () => {
    const base = { v: 1, run_id: 'r', created: 1, status: 'running', config: {}, world: { size: 1 }, host: 'h' };
    for (const pgid of [1, 0, -1]) {
      const parsed = parseRunManifest(JSON.stringify({ ...base, pgid }));
      assert.ok('error' in parsed, `pgid ${pgid} accepted`);
      assert.match(parsed.error, /pgid/);
    }
    assert.ok('manifest' in parseRunManifest(JSON.stringify({ ...base, pgid: 4242 })));
  });

  it("refuses a group that is not the run's (no run mark), and it lives on", async () => {
    const witnessed = await witness();
    const other = witnessed.pgid;
    const manifest: RunManifest = {
      v: 1,
      run_id: 'victim-test',
      created: Date.now() / 1000 - 60,
      status: 'running',
      config: {},
      world: { size: 1 },
      host: os.hostname(),
      pgid: other,
      pids: [other],
    };
    const outcome = await stopRun(local, manifest, { graceMs: 2000 });
    assert.equal(outcome.stopped, false);
    assert.match('refused' in outcome ? outcome.refused : '', /does not carry the run's mark/);
    assert.deepEqual(await witnessed.signalsSeen(), [], 'the unrelated group was signalled');
    assert.ok(groupAlive(other), 'the unrelated group lives on');
  });

  it("refuses the caller's own process group", async () => {
    const own = Number(
      readFileSync('/proc/self/stat', 'utf8')
        .replace(/^.*\) /, '')
        .split(' ')[2],
    );
    const manifest: RunManifest = {
      v: 1,
      run_id: 'mine',
      created: 1,
      status: 'running',
      config: {},
      world: { size: 1 },
      host: os.hostname(),
      pgid: own,
    };
    const outcome = await stopRun(local, manifest, { graceMs: 2000 });
    assert.match('refused' in outcome ? outcome.refused : '', /group of the process asking/);
  });

  it('refuses when the leader is not the process the run started as (its start time differs), and the run lives on', async () => {
    const runDir = path.join(tmp, 'reused-20261126-000000-abcd');
    const manifest = await startRun(local, runDir);
    assert.ok(
      manifest.leader_start !== undefined && manifest.boot_id,
      "the detached start records the leader's start time and boot",
    );
    const outcome = await stopRun(local, { ...manifest, leader_start: manifest.leader_start! + 7 }, { graceMs: 2000 });
    assert.match('refused' in outcome ? outcome.refused : '', /started at another time than the run's leader/);
    assert.ok(groupAlive(manifest.pgid!));
    // A run.json whose run id is not the one its processes carry is not theirs either.
    const renamed = await stopRun(local, { ...manifest, run_id: 'another-run' }, { graceMs: 2000 });
    assert.match('refused' in renamed ? renamed.refused : '', /does not carry the run's mark/);
    assert.ok(groupAlive(manifest.pgid!));
  });

  it('kills at once when asked to during the grace period, without waiting it out', async () => {
    const runDir = path.join(tmp, 'deaf-20261126-000000-abcd');
    const manifest = await startRun(local, runDir, DEAF_TRAINER);
    const killNow = new AbortController();
    // A grace longer than mocha's timeout: only the abort can end the wait in time.
    const outcome = await stopRun(local, manifest, {
      graceMs: 10 * 60_000,
      killNow: killNow.signal,
      signalled: () => setTimeout(() => killNow.abort(), 300),
    });
    assert.deepEqual(outcome, { stopped: true, signal: 'SIGTERM', killed: true, strays: [] });
    await until('the group is gone', () => !groupAlive(manifest.pgid!), 10_000);
  });

  it("stops the run's own group with the graceful signal", async () => {
    const runDir = path.join(tmp, 'own-20261126-000000-abcd');
    const manifest = await startRun(local, runDir);
    const outcome = await stopRun(local, manifest, { graceMs: 20_000 });
    assert.deepEqual(outcome, { stopped: true, signal: 'SIGTERM', killed: false, strays: [] });
    await until('the group is gone', () => !groupAlive(manifest.pgid!), 10_000);
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

    it("refuses an unrelated group on the host, and stops the run's own", async () => {
      const other = stranger();
      const foreign: RunManifest = {
        v: 1,
        run_id: 'victim-test',
        created: Date.now() / 1000 - 60,
        status: 'running',
        config: {},
        world: { size: 1 },
        host: os.hostname(),
        pgid: other,
      };
      const refused = await stopRun(ssh, foreign, { graceMs: 2000 });
      assert.match('refused' in refused ? refused.refused : '', /does not carry the run's mark/);
      assert.ok(groupAlive(other));

      const runDir = path.join(tmp, 'remote-20261126-000000-abcd');
      const manifest = await startRun(ssh, runDir);
      const stopped = await stopRun(ssh, manifest, { graceMs: 20_000 });
      assert.equal(stopped.stopped, true);
      await until('the group is gone', () => !groupAlive(manifest.pgid!), 10_000);
    });
  });
});
