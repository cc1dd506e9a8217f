// Multi-process runs launched the way the editor launches them (runs/launch/launcher.ts), with the
// real trainer under real mpirun: on this machine through fsdp-train (which runs mpirun itself), on an
// SSH host (real sshd on 127.0.0.1) as mpirun around the host's runtime. "Stop" must reach every rank
// as a graceful stop — a checkpoint, run_end "stopped" — and a resume must continue with every step
// exactly once. (Sorted after remote-runtime.test.ts, whose runtime build on the host it reuses.)
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gracefulStopSignal } from '../../runs/launch/mpirun';
import { ownedCommand } from '../harness/run-owner-argv';
import type { LaunchedRun, LaunchRequest } from '../../runs/launch/launcher';
import { launchRun } from '../../runs/launch/launch-run';
import { previousOf, testLaunchEnvironment } from '../harness/launch-environment';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { repoRoot } from '../../scripts/code-server';
import { sampleRunConfig } from '../harness/sample-run-config';
import { LoopbackSshd, SHARED_REMOTE_BASE } from '../harness/sshd';
import { until as untilHeld } from '../harness/until';

const STEPS = 40;
const TRAINER = { node: process.execPath, cli: path.join(repoRoot, 'dist', 'cli', 'fsdp-train.js') };

/** samples/tiny-cpu.yaml made smaller and sharded over two ranks, written into `dir`. */
function twoRankConfig(dir: string): LaunchRequest {
  const { configPath, config } = sampleRunConfig(dir, {
    name: 'two-ranks',
    steps: STEPS,
    sharding: 'FULL_SHARD',
    launch: (text) => text.replace(/^(\s+)nproc_per_node: .*$/m, '$1nproc_per_node: 2'),
  });
  assert.equal(config.launch.nproc_per_node, 2);
  return { configPath, config };
}

/** Steps of the complete checkpoints of a run (folders checkpoints/step-NNNNNNNN, native/FORMATS.md). */
function checkpointSteps(runDir: string): number[] {
  return readdirSync(path.join(runDir, 'checkpoints'))
    .filter((n) => /^step-\d+$/.test(n))
    .map((n) => Number(n.slice(5)));
}

const until = (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 120_000) =>
  untilHeld(what, cond, timeoutMs);

/**
 * Launch, stop as "FSDP: Stop run" does (the graceful signal for the run's command, to its process
 * group), check what the stop left, resume, and check the whole run. `launch(previous?)` starts the
 * run, or resumes it given its stopped manifest.
 */
async function stopAndResume(
  machine: RunMachine,
  launch: (resume?: LaunchedRun) => Promise<LaunchedRun>,
  checkpoints: (runDir: string) => Promise<number[]>,
): Promise<void> {
  const first = await launch();
  const watch = new RunWatch({ target: machine.target, runDir: first.runDir }, machine);
  try {
    await watch.start();
    await until('step 3', () => (watch.history.lastStep ?? 0) >= 3);
    await watch.refreshManifest();
    const signal = gracefulStopSignal(watch.manifest?.command);
    await machine.signal(first.pgid, signal);
    await until('run_end', () => !!watch.history.end);
    assert.equal(watch.history.end?.status, 'stopped', `run_end after ${signal}: ${JSON.stringify(watch.history.end)}`);
    const stoppedAt = watch.history.lastStep!;
    assert.ok(stoppedAt < STEPS, `stopped at step ${stoppedAt}, before the end`);
    await until('process group gone', async () => (await machine.isAlive(first.pgid)) === false, 30_000);
    assert.deepEqual(
      await checkpoints(first.runDir),
      [stoppedAt],
      'the stop saved a checkpoint at the step it stopped after',
    );
    await watch.refreshManifest();
    assert.equal(watch.manifest?.status, 'stopped');
    assert.deepEqual(new Set(watch.history.memoryByRank.keys()), new Set([0, 1]), 'each rank reports its memory');

    await launch(first);
    watch.follow();
    await until('the resumed run completes', () => watch.history.end?.status === 'completed', 180_000);
    assert.deepEqual(
      [...watch.history.step.loss.steps],
      Array.from({ length: STEPS }, (_, i) => i + 1),
      'every step once',
    );
    assert.equal(watch.problems.length, 0, JSON.stringify(watch.problems));
  } finally {
    watch.dispose();
  }
}

describe('sharded runs launched as the editor launches them (real mpirun, 2 ranks)', function () {
  this.timeout(600_000);
  let tmp: string;

  before(() => {
    assert.ok(existsSync(TRAINER.cli), `${TRAINER.cli} is built by npm test's set-up (npm run build)`);
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-sharded-launch-'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('on this machine (fsdp-train runs mpirun): Stop saves a checkpoint after the current step and Resume continues with every step once', async () => {
    const local = new LocalMachine();
    const req = twoRankConfig(tmp);
    await stopAndResume(
      local,
      async (previous) => {
        const env = testLaunchEnvironment({ local, localTrainer: TRAINER });
        const request = previous ? { ...req, resumeRunDir: previous.runDir } : req;
        const launched = (await launchRun(
          { kind: 'native', request },
          { kind: 'local' },
          env,
          previousOf(await (previous && local.readManifest(previous.runDir))),
        )) as LaunchedRun;
        assert.notEqual(
          ownedCommand(launched.argv)[0],
          'mpirun',
          'a local run is fsdp-train under its supervisor, which stops its ranks gracefully',
        );
        return launched;
      },
      async (runDir) => checkpointSteps(runDir),
    );
  });

  it('on an SSH host (mpirun around the runtime): Stop sends SIGUSR1, mpirun forwards it, a checkpoint is saved and Resume continues with every step once', async () => {
    const sshd = await LoopbackSshd.start();
    try {
      const settings = () => ({ configFile: sshd.clientConfig });
      const ssh = new SshMachine(sshd.alias, settings);
      const env = testLaunchEnvironment({
        ssh: new Map([[sshd.alias, ssh]]),
        sshSettings: settings,
        remoteBase: SHARED_REMOTE_BASE,
      });
      const req = twoRankConfig(tmp);
      await stopAndResume(
        ssh,
        async (previous) => {
          const request = previous ? { ...req, resumeRunDir: previous.runDir } : req;
          const launched = (await launchRun(
            { kind: 'native', request },
            { kind: 'ssh', host: sshd.alias },
            env,
            previousOf(await (previous && ssh.readManifest(previous.runDir))),
          )) as LaunchedRun;
          assert.equal(ownedCommand(launched.argv)[0], 'mpirun', 'the supervisor runs mpirun on the host');
          assert.equal(gracefulStopSignal(launched.argv), 'SIGUSR1');
          return launched;
        },
        // The host is this machine: its run folder can be listed directly.
        async (runDir) => checkpointSteps(runDir),
      );
    } finally {
      await sshd.stop();
    }
  });
});
