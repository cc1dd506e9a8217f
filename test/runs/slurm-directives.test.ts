// Extra #SBATCH directives that break a run, against a real one-node SLURM (test/harness/slurm.ts):
// --wait, --array, --dependency and --hold are refused at launch before a run folder is written or
// a job queued; and a job sbatch queued (held) but never reported — sbatch killed while it waits —
// is cancelled, not left in the queue, and the run says so (issue 40, item 5).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { launchRun } from '../../runs/launch/launch-run';
import { localLoginHost, type LoginHost } from '../../runs/machines/login-host';
import { SlurmCluster } from '../../runs/slurm/slurm-cluster';
import { repoRoot } from '../../scripts/code-server';
import { testLaunchEnvironment } from '../harness/launch-environment';
import { LocalSlurm } from '../harness/slurm';
import { slurmRunConfig } from '../harness/slurm-run-config';

const NATIVE = path.join(repoRoot, 'native', 'build', 'Release', 'fsdp-train-native');

describe('SLURM extra directives that break a run (real slurmctld, slurmd and munged on this machine)', function () {
  this.timeout(600_000);
  let slurm: LocalSlurm;
  let tmp: string;
  const savedConf = process.env.SLURM_CONF;

  before(async () => {
    assert.ok(existsSync(NATIVE), `${NATIVE} is built by npm test's set-up`);
    slurm = await LocalSlurm.start({ cpus: 4 });
    process.env.SLURM_CONF = slurm.conf;
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-slurm-directives-'));
  });
  after(async () => {
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
    await slurm?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Every job the controller holds, with its state and working directory. */
  const queue = () =>
    slurm
      .check(['squeue', '-h', '-t', 'all', '-o', '%i|%T|%Z'])
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [id, state, workDir] = l.split('|');
        return { id, state, workDir };
      });

  for (const extra of ['--wait', '-W', '--array=0-1', '-a 0-1', '--dependency=afterok:1', '--dep afterany:1', '-H']) {
    it(`${extra} is refused at launch: no run folder, no job`, async () => {
      const dir = mkdtempSync(path.join(tmp, 'refused-'));
      const req = slurmRunConfig(dir, { steps: 5, extra: ['--exclusive', extra] });
      const env = testLaunchEnvironment({
        clusters: new Map([['local', new SlurmCluster(localLoginHost())]]),
        localNative: NATIVE,
      });
      const before = queue().length;
      await assert.rejects(
        launchRun({ kind: 'native', request: req }, { kind: 'slurm', loginHost: 'local' }, env),
        (e: Error) => {
          assert.match(e.message, /launch\.slurm\.extra_directives: ".*" sets --(wait|array|dependency|hold)/);
          assert.match(e.message, /Remove it/);
          return true;
        },
      );
      assert.equal(queue().length, before, 'nothing was submitted');
      const runs = path.join(dir, 'runs');
      assert.deepEqual(existsSync(runs) ? readdirSync(runs) : [], [], 'no run folder was written');
    });
  }

  it('a job sbatch queued held but never reported (sbatch killed while it waits) is cancelled, and the run says so', async () => {
    // sbatch made to wait for the end of the job it submits held, then killed: the job is queued
    // and no id came back — what a hung or killed sbatch leaves.
    const real = localLoginHost();
    const killedSbatch: LoginHost = {
      target: real.target,
      run: (argv, opts = {}) =>
        argv[0] === 'sbatch'
          ? real.run(['sbatch', '--wait', ...argv.slice(1)], { ...opts, timeoutMs: 5_000 })
          : real.run(argv, opts),
    };
    const dir = mkdtempSync(path.join(tmp, 'killed-'));
    const req = slurmRunConfig(dir, { steps: 5 });
    const env = testLaunchEnvironment({
      clusters: new Map([['local', new SlurmCluster(killedSbatch)]]),
      localNative: NATIVE,
    });
    await assert.rejects(
      launchRun({ kind: 'native', request: req }, { kind: 'slurm', loginHost: 'local' }, env),
      /sbatch refused the job: .*ended by SIGKILL.*the job it had queued \(\d+\) was cancelled/s,
    );
    const [runDir] = readdirSync(path.join(dir, 'runs')).map((d) => path.join(dir, 'runs', d));
    const mine = queue().filter((j) => j.workDir === runDir);
    assert.equal(mine.length, 1, `the job sbatch queued is known to squeue: ${JSON.stringify(queue())}`);
    assert.equal(mine[0].state, 'CANCELLED', `not left in the queue: ${JSON.stringify(mine)}`);
    const m = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as RunManifest;
    assert.equal(m.status, 'failed');
    assert.match(m.end_reason ?? '', new RegExp(`the job it had queued \\(${mine[0].id}\\) was cancelled`));
  });
});
