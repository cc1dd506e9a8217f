// One run across two hosts without a scheduler (launch.hosts), as far as one machine allows: two
// network namespaces with their own addresses and host names, each with a real sshd
// (test/harness/host-namespaces.ts), sharing this machine's filesystem. The editor's launcher finds
// the same runtime build on both, starts mpirun --host from the first, which starts the second
// host's rank over ssh; HYBRID_SHARD's nodes are the two hosts. Stop reaches the rank on the other
// host (mpirun forwards SIGUSR1), and Resume continues with every step once.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gracefulStopSignal } from '../../runs/launch/mpirun';
import { ownedCommand } from '../harness/run-owner-argv';
import { reachableName } from '../../runs/launch/hosts-launch';
import { launchRun } from '../../runs/launch/launch-run';
import { previousOf, testLaunchEnvironment } from '../harness/launch-environment';
import type { LaunchedRun, LaunchRequest } from '../../runs/launch/launcher';
import { RunWatch } from '../../runs/watch/run-watch';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { NamespaceHosts } from '../harness/host-namespaces';
import { sampleRunConfig } from '../harness/sample-run-config';
import { SHARED_REMOTE_BASE } from '../harness/sshd';
import { until as untilHeld } from '../harness/until';

const STEPS = 60;
const until = (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 600_000) =>
  untilHeld(what, cond, timeoutMs, 200);

function hostsConfig(dir: string, aliases: string[]): LaunchRequest {
  const { configPath, config, problems } = sampleRunConfig(dir, {
    name: 'two-hosts',
    steps: STEPS,
    sharding: 'HYBRID_SHARD',
    launch: (text) =>
      text
        .replace(/^(\s+)target: .*\n/m, '')
        .replace(/^(\s+)nproc_per_node: .*$/m, `$1nproc_per_node: 1\n$1nnodes: 2\n$1hosts: ${JSON.stringify(aliases)}`),
  });
  assert.equal(problems.filter((p) => p.severity === 'error').length, 0, JSON.stringify(problems));
  return { configPath, config };
}

describe('a run across two hosts with mpirun --host (network namespaces with their own sshd and host name)', function () {
  this.timeout(900_000);
  const why = NamespaceHosts.unavailable();
  let hosts: NamespaceHosts;
  let tmp: string;

  before(async function () {
    if (why) {
      // Not a stand-in for the test: this machine cannot make namespaces, and says why.
      console.log(`      skipped: network namespaces are not available here (${why})`);
      this.skip();
    }
    hosts = await NamespaceHosts.start(2);
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-hosts-run-'));
  });
  after(async () => {
    await hosts?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('finds the same runtime on both, runs HYBRID_SHARD with one node per host, stops both ranks with a checkpoint and resumes with every step once', async () => {
    const settings = () => ({ configFile: hosts.clientConfig });
    const machines = new Map(hosts.aliases.map((a) => [a, new SshMachine(a, settings)]));
    const env = testLaunchEnvironment({ ssh: machines, sshSettings: settings, remoteBase: SHARED_REMOTE_BASE });
    const target = { kind: 'hosts' as const, hosts: hosts.aliases };
    assert.deepEqual(
      hosts.aliases.map((a) => reachableName(a, settings())),
      hosts.addresses,
      'mpirun is given what the aliases resolve to',
    );
    const req = hostsConfig(tmp, hosts.aliases);
    const first = (await launchRun({ kind: 'native', request: req }, target, env)) as LaunchedRun;
    assert.equal(ownedCommand(first.argv)[0], 'mpirun', 'the supervisor on the first host runs mpirun');
    assert.ok(
      first.argv.join(' ').includes(`--host ${hosts.addresses[0]}:1,${hosts.addresses[1]}:1`),
      first.argv.join(' '),
    );
    const machine = machines.get(hosts.aliases[0])!;
    const watch = new RunWatch({ target: machine.target, runDir: first.runDir }, machine);
    try {
      await watch.start();
      await until('steps from both hosts', () => (watch.history.lastStep ?? 0) >= 3);
      const ranks = watch.history.start?.world.ranks ?? [];
      assert.deepEqual(
        ranks.map((r) => r.host),
        hosts.hostNames,
        'rank 0 on the first host, rank 1 on the second',
      );
      await machine.signal(first.pgid, gracefulStopSignal(first.argv));
      await until('run_end', () => !!watch.history.end);
      assert.equal(watch.history.end?.status, 'stopped', JSON.stringify(watch.history.end));
      const stoppedAt = watch.history.lastStep!;
      assert.ok(stoppedAt < STEPS);
      await until('the job to end on both hosts', async () => (await machine.isAlive(first.pgid)) === false, 60_000);
      const checkpoints = readdirSync(path.join(first.runDir, 'checkpoints')).filter((n) => /^step-\d+$/.test(n));
      assert.deepEqual(
        checkpoints.map((n) => Number(n.slice(5))),
        [stoppedAt],
        'one checkpoint, at the stop',
      );

      await launchRun(
        { kind: 'native', request: { ...req, resumeRunDir: first.runDir } },
        target,
        env,
        previousOf(await machine.readManifest(first.runDir)),
      );
      watch.follow();
      await until('the resumed run completes', () => watch.history.end?.status === 'completed');
      assert.deepEqual(
        [...watch.history.step.loss.steps],
        Array.from({ length: STEPS }, (_, i) => i + 1),
        'every step once',
      );
      assert.equal(watch.problems.length, 0, JSON.stringify(watch.problems));
      assert.ok(existsSync(path.join(first.runDir, 'run.json')));
    } finally {
      watch.dispose();
    }
  });
});
