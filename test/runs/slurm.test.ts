// Runs submitted to a real SLURM (test/harness/slurm.ts: slurmctld + slurmd + munged on this
// machine) the way the editor submits them (runs/slurm/slurm-launch.ts), with the real trainer
// on 2 tasks under srun --mpi=pmix, watched by the editor's RunWatch: the job queues behind
// another, runs, is followed live, stops with a checkpoint, resumes as a new job with every step
// once; a job at its time limit saves and continues in its requeued job; scancel from outside
// shows as cancelled; hostile names stay inert. Then the same through a login host reached by SSH.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { LocalMachine } from '../../runs/machines/local-machine';
import { localLoginHost, sshLoginHost } from '../../runs/machines/login-host';
import type { RunMachine } from '../../runs/machines/run-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { SlurmCluster } from '../../runs/slurm/slurm-cluster';
import { stopSlurmJob } from '../../runs/slurm/slurm-control';
import { placeOverSsh, type LaunchedSlurmRun } from '../../runs/slurm/slurm-launch';
import { launchRun, type LaunchEnvironment } from '../../runs/launch/launch-run';
import type { LaunchRequest } from '../../runs/launch/launcher';
import { previousOf, testLaunchEnvironment } from '../harness/launch-environment';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { repoRoot } from '../../scripts/code-server';
import { VENV_PYTHON } from '../harness/pytorch';
import { LocalSlurm } from '../harness/slurm';
import { slurmRunConfig } from '../harness/slurm-run-config';
import { LoopbackSshd, SHARED_REMOTE_BASE } from '../harness/sshd';
import { until as untilHeld } from '../harness/until';
import { commandOf } from '../harness/proc';

const NATIVE = path.join(repoRoot, 'native', 'build', 'Release', 'fsdp-train-native');
const HOSTILE = `it's "q" $(touch /tmp/fsdp-slurm-pwned) #c`;
const PWNED = '/tmp/fsdp-slurm-pwned';

// Generous limits: a loaded 2-core machine (other builds and test runs) can slow a run tenfold.
const until = (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 240_000) =>
  untilHeld(what, cond, timeoutMs, 200);

function checkpointSteps(runDir: string): number[] {
  const dir = path.join(runDir, 'checkpoints');
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => /^step-\d+$/.test(n))
        .map((n) => Number(n.slice(5)))
        .sort((a, b) => a - b)
    : [];
}

function readManifest(runDir: string): RunManifest {
  return JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as RunManifest;
}

function assertEveryStepOnce(watch: RunWatch, last: number): void {
  assert.deepEqual(
    [...watch.history.step.loss.steps],
    Array.from({ length: last }, (_, i) => i + 1),
    'every step once',
  );
  assert.equal(watch.problems.length, 0, JSON.stringify(watch.problems));
}

/**
 * The first acceptance story: queued behind a job that fills the node, then running and watched,
 * stopped with a checkpoint, resumed as a new job that completes with every step once.
 */
interface SlurmDoor {
  env: LaunchEnvironment;
  loginHost: string;
  cluster: SlurmCluster;
  /** The runtime in place on the cluster's filesystem before the queueing starts. */
  prepare: (config: LaunchRequest['config']) => Promise<unknown>;
}

async function queueRunStopResume(
  slurm: LocalSlurm,
  door: SlurmDoor,
  machine: RunMachine,
  dir: string,
  runDirOf: (l: LaunchedSlurmRun) => string,
): Promise<void> {
  const submit = async (request: LaunchRequest, previous?: RunManifest) =>
    (await launchRun(
      { kind: 'native', request },
      { kind: 'slurm', loginHost: door.loginHost },
      door.env,
      previousOf(previous),
    )) as LaunchedSlurmRun;
  // Enough steps that a quiet machine (about 40 ms a step) is still training when the watch looks.
  const steps = 150;
  const req = slurmRunConfig(dir, { steps, jobName: HOSTILE, extra: [`--comment=${HOSTILE}`] });
  // The runtime in place first (over SSH: built on first use, minutes), so the queueing is ours.
  await door.prepare(req.config);
  // A job that takes every CPU of the node: ours queues behind it.
  const blocker = slurm.fillNode();
  await until('the blocker to run', () => slurm.jobState(blocker) === 'RUNNING');
  const first = await submit(req);
  const runDir = runDirOf(first);
  const watch = new RunWatch({ target: machine.target, runDir: first.runDir }, machine, door.cluster);
  try {
    await watch.start();
    assert.equal(watch.status(), 'queued', `status after submission: ${watch.status()} (${watch.endReason()})`);
    await until('the start estimate', async () => {
      await watch.refreshJob();
      return /waiting for resources; expected to start/.test(watch.endReason() ?? '');
    });
    assert.ok(watch.isLive(), 'a queued run can be stopped');
    assert.equal(readManifest(runDir).slurm?.job_id, first.jobId, 'run.json names the job');
    const names = slurm.check(['squeue', '-h', '-j', first.jobId, '-o', '%j\x1f%k']).trim().split('\x1f');
    assert.deepEqual(names, [HOSTILE, HOSTILE], 'the job name and an extra directive arrive as they were written');
    assert.ok(!existsSync(PWNED), 'nothing in them was executed');
    // Attach lists the user's jobs with their run folders (the job's working directory).
    const mine = await door.cluster.myJobs();
    assert.deepEqual(
      mine.filter((j) => j.id === first.jobId).map((j) => [j.state, j.workDir, j.name]),
      [['PENDING', first.runDir, HOSTILE]],
    );

    slurm.check(['scancel', blocker]);
    await until(
      'running, with steps arriving live',
      () => watch.status() === 'running' && (watch.history.lastStep ?? 0) >= 5,
    ).catch((e: Error) => {
      const out = path.join(runDir, `slurm-${first.jobId}.out`);
      throw new Error(
        `${e.message}; status ${watch.status()} (${watch.endReason()}), job ${JSON.stringify(watch.job)}, connection ${JSON.stringify(watch.connection)}; ${out}:\n${existsSync(out) ? readFileSync(out, 'utf8').slice(-3000) : '(none)'}`,
        { cause: e },
      );
    });
    const outcome = await stopSlurmJob(door.cluster, first.jobId, 60);
    assert.equal(outcome, 'stopped');
    await until('the run_end', () => !!watch.history.end);
    assert.equal(watch.history.end?.status, 'stopped', JSON.stringify(watch.history.end));
    const stoppedAt = watch.history.lastStep!;
    assert.ok(stoppedAt < steps, `stopped at step ${stoppedAt}, before the end`);
    assert.deepEqual(checkpointSteps(runDir), [stoppedAt], 'the stop saved a checkpoint at the step it stopped after');
    await until('the job to end', async () => {
      await watch.refreshJob();
      return watch.status() === 'stopped' && !watch.isLive();
    });
    assert.deepEqual(new Set(watch.history.memoryByRank.keys()), new Set([0, 1]), 'both ranks report');

    const second = await submit({ ...req, resumeRunDir: first.runDir }, readManifest(runDir));
    assert.notEqual(second.jobId, first.jobId, 'a resume is a new job');
    assert.deepEqual(readManifest(runDir).slurm?.jobs, [first.jobId, second.jobId]);
    await watch.refreshJob();
    await until('the resumed run completes', () => watch.status() === 'completed', 600_000);
    assertEveryStepOnce(watch, steps);
    assert.equal(watch.history.start?.start_step, stoppedAt, 'the resumed job continued from the checkpoint');
    // The job's start and end name the attempt its owner wrote as the job started (srun hands the ranks
    // FSDP_RUN_ATTEMPT): the watch told them this job's by that, not by the controller's clock.
    const attempt = readManifest(runDir).attempt?.id;
    assert.ok(attempt, "the job's owner named its attempt in run.json");
    assert.deepEqual([watch.history.start?.attempt, watch.history.end?.attempt], [attempt, attempt]);

    // "Continue training" for 20 more steps: a third job, from the final checkpoint.
    const third = await submit(
      { ...req, resumeRunDir: first.runDir, overrides: [`training.max_steps=${steps + 20}`] },
      readManifest(runDir),
    );
    await watch.refreshJob();
    await until(
      'the continued run completes',
      () => watch.status() === 'completed' && watch.history.lastStep === steps + 20,
      600_000,
    );
    assertEveryStepOnce(watch, steps + 20);
    assert.deepEqual(readManifest(runDir).slurm?.jobs, [first.jobId, second.jobId, third.jobId]);
  } finally {
    watch.dispose();
    slurm.run(['scancel', blocker]);
  }
}

describe('SLURM runs (real slurmctld, slurmd and munged on this machine; srun --mpi=pmix, 2 tasks)', function () {
  this.timeout(1_200_000);
  let slurm: LocalSlurm;
  let tmp: string;
  const savedConf = process.env.SLURM_CONF;

  before(async () => {
    assert.ok(existsSync(NATIVE), `${NATIVE} is built by npm test's set-up`);
    rmSync(PWNED, { force: true });
    slurm = await LocalSlurm.start({ cpus: 4 });
    // The editor's login-host commands read SLURM_CONF from its environment, as on a real login host.
    process.env.SLURM_CONF = slurm.conf;
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-slurm-runs-'));
  });
  after(async () => {
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
    await slurm?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('this machine as the login host: queued behind another job, running and watched live, stopped with a checkpoint, resumed as a new job, every step once', async () => {
    const cluster = new SlurmCluster(localLoginHost());
    const dir = mkdtempSync(path.join(tmp, 'here '));
    const env = testLaunchEnvironment({ clusters: new Map([['local', cluster]]), localNative: NATIVE });
    await queueRunStopResume(
      slurm,
      { env, loginHost: 'local', cluster, prepare: async () => undefined },
      new LocalMachine(),
      dir,
      (l) => l.runDir,
    );
  });

  it('a job at its time limit saves before it is killed and its requeued job continues; scancel from outside shows as cancelled', async () => {
    const cluster = new SlurmCluster(localLoginHost());
    const dir = mkdtempSync(path.join(tmp, 'limit-'));
    // 2 minutes, the signal 30 s before: the first job is told to save 30–90 s in (SLURM may send
    // the signal up to 60 s early: with a 1-minute limit it came as the job started, in CI), long
    // before 100000 steps; the requeued one is cancelled in its first 30 s.
    const req = slurmRunConfig(dir, { steps: 100_000, timeLimit: 2, signalBeforeLimitS: 30 });
    const env = testLaunchEnvironment({ clusters: new Map([['local', cluster]]), localNative: NATIVE });
    const launched = (await launchRun(
      { kind: 'native', request: req },
      { kind: 'slurm', loginHost: 'local' },
      env,
    )) as LaunchedSlurmRun;
    const machine = new LocalMachine();
    const watch = new RunWatch({ target: machine.target, runDir: launched.runDir }, machine, cluster);
    try {
      await watch.start();
      await until('the time-limit stop', () => watch.history.end?.status === 'stopped', 180_000);
      const savedAt = watch.history.lastStep!;
      assert.deepEqual(checkpointSteps(launched.runDir), [savedAt], 'saved at the step it stopped after');
      // The next job of it gets time enough, however slow a loaded machine makes its start.
      slurm.check(['scontrol', 'update', `JobId=${launched.jobId}`, 'TimeLimit=10']);
      await until(
        'the requeued job to run and train past the checkpoint',
        () => watch.status() === 'running' && (watch.history.lastStep ?? 0) >= savedAt + 5,
      );
      assert.equal(watch.history.start?.start_step, savedAt, 'the requeued job resumed from the checkpoint');
      assert.equal(readManifest(launched.runDir).slurm?.job_id, launched.jobId, 'a requeue keeps the job id');
      assert.match(readFileSync(path.join(launched.runDir, `slurm-${launched.jobId}.out`), 'utf8'), /requeueing job/);

      slurm.check(['scancel', launched.jobId]);
      await until('cancelled', () => watch.status() === 'cancelled');
      assert.match(watch.endReason() ?? '', new RegExp(`job ${launched.jobId} was cancelled`));
      assertEveryStepOnce(watch, watch.history.lastStep!);
      await until(
        'the end recorded in run.json',
        () => readManifest(launched.runDir).slurm?.final_state === 'CANCELLED',
        30_000,
      );
      // After the controller forgets the job (no accounting here), run.json still says it.
      const later = new RunWatch(
        { target: machine.target, runDir: launched.runDir },
        machine,
        new SlurmCluster({
          target: 'local',
          run: async () => ({ code: 1, stdout: '', stderr: 'slurm_load_jobs error: Invalid job id specified' }),
        }),
      );
      await later.refreshJob();
      assert.equal(later.status(), 'cancelled');
      later.dispose();
    } finally {
      watch.dispose();
    }
  });

  it('a hostile partition name is refused by sbatch, and nothing in it runs; the real partition is read for the memory check', async () => {
    const cluster = new SlurmCluster(localLoginHost());
    assert.deepEqual(await cluster.partition(), {
      name: slurm.partition,
      memoryBytes: Math.floor(os.totalmem() / 2 ** 20 / 2) * 2 ** 20,
      cpusPerNode: slurm.cpus,
    });
    assert.equal(await cluster.partition('no-such-partition').catch(() => undefined), undefined);
    const dir = mkdtempSync(path.join(tmp, 'partition-'));
    const req = slurmRunConfig(dir, { steps: 10, partition: HOSTILE });
    const env = testLaunchEnvironment({ clusters: new Map([['local', cluster]]), localNative: NATIVE });
    await assert.rejects(
      launchRun({ kind: 'native', request: req }, { kind: 'slurm', loginHost: 'local' }, env),
      /sbatch refused the job: .*invalid partition/i,
    );
    assert.ok(!existsSync(PWNED));
    // The run sbatch refused is failed with sbatch's words, not "starting" for ever.
    const [runDir] = readdirSync(path.join(dir, 'runs')).map((d) => path.join(dir, 'runs', d));
    const m = readManifest(runDir);
    assert.equal(m.status, 'failed');
    assert.match(m.end_reason ?? '', /sbatch refused the job: .*invalid partition/i);
    const machine = new LocalMachine();
    const watch = new RunWatch({ target: machine.target, runDir }, machine, cluster);
    try {
      await watch.start();
      await until('the watch to say failed', () => watch.status() === 'failed', 30_000);
      assert.equal(watch.isLive(), false);
      assert.match(watch.endReason() ?? '', /invalid partition/i);
    } finally {
      watch.dispose();
    }
  });

  it('Stop on a queued job cancels it and records its end in run.json, which no owner in the job could (none ever ran)', async () => {
    const cluster = new SlurmCluster(localLoginHost());
    const dir = mkdtempSync(path.join(tmp, 'queued-'));
    const env = testLaunchEnvironment({ clusters: new Map([['local', cluster]]), localNative: NATIVE });
    const blocker = slurm.fillNode();
    try {
      await until('the blocker to run', () => slurm.jobState(blocker) === 'RUNNING');
      const launched = (await launchRun(
        { kind: 'native', request: slurmRunConfig(dir, { steps: 10 }) },
        { kind: 'slurm', loginHost: 'local' },
        env,
      )) as LaunchedSlurmRun;
      await until('queued behind the blocker', () => slurm.jobState(launched.jobId) === 'PENDING');
      assert.equal(
        await stopSlurmJob(cluster, launched.jobId, 60, () => undefined, 'USR1', launched.runDir),
        'cancelled-while-queued',
      );
      const m = readManifest(launched.runDir);
      assert.equal(m.slurm?.final_state, 'CANCELLED', JSON.stringify(m.slurm));
      assert.equal(m.status, 'failed');
      assert.match(m.end_reason ?? '', new RegExp(`^job ${launched.jobId} was cancelled`));
    } finally {
      slurm.run(['scancel', blocker]);
    }
  });

  it("a job whose supervisor is stopped (SIGSTOP) in the batch step: its guard ends the run, naming it, and the batch shell's group lives on to end the job", async () => {
    const cluster = new SlurmCluster(localLoginHost());
    const dir = mkdtempSync(path.join(tmp, 'frozen-'));
    const req = slurmRunConfig(dir, { steps: 100_000, timeLimit: 10 });
    const env = testLaunchEnvironment({ clusters: new Map([['local', cluster]]), localNative: NATIVE });
    // sbatch hands the job the submitting environment: a short stop is enough to call the owner frozen.
    const saved = process.env.FSDP_STUDIO_FROZEN_AFTER_S;
    process.env.FSDP_STUDIO_FROZEN_AFTER_S = '2';
    let launched: LaunchedSlurmRun;
    try {
      launched = (await launchRun(
        { kind: 'native', request: req },
        { kind: 'slurm', loginHost: 'local' },
        env,
      )) as LaunchedSlurmRun;
    } finally {
      if (saved === undefined) delete process.env.FSDP_STUDIO_FROZEN_AFTER_S;
      else process.env.FSDP_STUDIO_FROZEN_AFTER_S = saved;
    }
    const { runDir, jobId } = launched;
    const machine = new LocalMachine();
    const watch = new RunWatch({ target: machine.target, runDir }, machine, cluster);
    let supervisor = 0;
    try {
      await watch.start();
      await until('running, with steps', () => watch.status() === 'running' && (watch.history.lastStep ?? 0) >= 3);
      supervisor = readManifest(runDir).pids?.[0] ?? 0;
      assert.match(commandOf(supervisor), /supervise\.py/, "run.json names the job's owner first");
      process.kill(supervisor, 'SIGSTOP');
      await until('the run ends', async () => {
        await watch.refreshJob();
        return !watch.isLive();
      });
      const manifest = readManifest(runDir);
      assert.equal(manifest.status, 'failed', JSON.stringify(manifest));
      assert.match(
        manifest.end_reason ?? '',
        new RegExp(`^its supervisor \\(pid ${supervisor}\\) was stopped \\(SIGSTOP\\) for 2 s`),
      );
      const ends = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"type":"run_end"'));
      assert.equal(ends.length, 1, ends.join('\n'));
      assert.equal(watch.status(), 'failed', watch.endReason());
    } finally {
      watch.dispose();
      if (supervisor > 0)
        try {
          process.kill(supervisor, 'SIGCONT');
        } catch {
          // ended
        }
      slurm.run(['scancel', jobId]);
    }
  });

  it("a person's PyTorch script from a launch spec: one task per rank with the env:// rendezvous from SLURM under the companion's supervisor, stopped by job id with SIGTERM, both ranks after the same step", async () => {
    const cluster = new SlurmCluster(localLoginHost());
    const dir = mkdtempSync(path.join(tmp, 'script-'));
    const specFile = path.join(dir, 'ddp.fsdp-launch.yaml');
    const ddp = path.join(repoRoot, 'test', 'pytorch', 'ddp_train.py');
    writeFileSync(
      specFile,
      [
        'name: ddp-on-slurm',
        `command: [${JSON.stringify(VENV_PYTHON)}, ${JSON.stringify(ddp)}, --steps, "100000", --step-sleep, "0.02", --checkpoint, ${JSON.stringify(path.join(dir, 'ckpt'))}]`,
        'nproc_per_node: 2',
        `python: ${JSON.stringify(VENV_PYTHON)}`,
        'slurm: {time_limit: 5}',
      ].join('\n') + '\n',
    );
    const { spec, problems } = loadLaunchSpec(readFileSync(specFile, 'utf8'), specFile);
    assert.ok(spec, JSON.stringify(problems));
    // The door's SLURM strategy for a command: the companion from this checkout (python/), the spec's runs folder and cwd.
    const env = testLaunchEnvironment({ clusters: new Map([['local', cluster]]) });
    const launched = (await launchRun(
      { kind: 'command', request: { specPath: specFile, spec } },
      { kind: 'slurm', loginHost: 'local' },
      env,
    )) as LaunchedSlurmRun;
    const { runDir, jobId } = launched;
    assert.equal(readManifest(runDir).kind, 'command');
    assert.equal(readManifest(runDir).slurm?.stop_signal, 'TERM', 'a script is stopped with SIGTERM');
    assert.equal(readManifest(runDir).world.size, 2);
    const machine = new LocalMachine();
    const watch = new RunWatch({ target: machine.target, runDir }, machine, cluster);
    try {
      await watch.start();
      await until(
        'the supervisor to report the run and rank 0 its steps',
        () => watch.status() === 'running' && (watch.history.lastStep ?? 0) >= 5,
      );
      assert.equal(
        await stopSlurmJob(cluster, jobId, 60, () => undefined, readManifest(runDir).slurm!.stop_signal),
        'stopped',
      );
      await until('stopped', () => watch.status() === 'stopped' && !watch.isLive());
      const out = readFileSync(path.join(runDir, `slurm-${jobId}.out`), 'utf8');
      const stops = [...out.matchAll(/rank (\d): stopped after step (\d+)/g)].map((m) => [m[1], m[2]]).sort();
      assert.deepEqual(
        stops.map((s) => s[0]),
        ['0', '1'],
        `two ranks, 0 and 1, joined one job and stopped:\n${out.slice(-2000)}`,
      );
      assert.equal(stops[0][1], stops[1][1], 'after the same step');
      assert.equal(readManifest(runDir).status, 'stopped', 'the supervisor recorded the stop');
      assert.ok(existsSync(path.join(dir, 'ckpt', 'last.pt')), 'the script saved its checkpoint on the stop');
    } finally {
      watch.dispose();
    }
  });

  it('through SSH: the loopback sshd as the login host, the runtime built there, the same story', async () => {
    const sshd = await LoopbackSshd.start({ alias: 'fsdp-login', setEnv: { SLURM_CONF: slurm.conf } });
    try {
      const settings = () => ({ configFile: sshd.clientConfig });
      const cluster = new SlurmCluster(sshLoginHost(sshd.alias, settings));
      const machine = new SshMachine(sshd.alias, settings);
      const dir = mkdtempSync(path.join(tmp, 'ssh-'));
      // The host is this machine: its run folder is read directly for the checks.
      const env = testLaunchEnvironment({
        ssh: new Map([[sshd.alias, machine]]),
        sshSettings: settings,
        clusters: new Map([[sshd.alias, cluster]]),
        remoteBase: SHARED_REMOTE_BASE,
      });
      const prepare = (config: LaunchRequest['config']) =>
        placeOverSsh(sshd.alias, settings, SHARED_REMOTE_BASE, repoRoot)(config, () => undefined);
      await queueRunStopResume(slurm, { env, loginHost: sshd.alias, cluster, prepare }, machine, dir, (l) => l.runDir);
    } finally {
      await sshd.stop();
    }
  });
});
