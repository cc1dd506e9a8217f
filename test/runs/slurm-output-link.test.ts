// A SLURM job's output (--output=<run folder>/slurm-%j.out, appended to) is opened by slurmstepd by
// name as the job's user, following links; a link put in the run folder in its place would carry
// the job's output to a file outside it (issue 40 item 2). The launcher makes the file itself, a
// regular file and never through a link, while the job is held, and refuses the job when a link is
// there. Against a real one-node SLURM (test/harness/slurm.ts): the link is planted at the worst
// moment, after sbatch queued the job held and before its release.
import assert from 'node:assert/strict';
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
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
const SECRET = "a file of the person's own, outside the run folder\n";

describe("a SLURM job's output file is never a link out of the run folder (real slurmctld, slurmd and munged)", function () {
  this.timeout(600_000);
  let slurm: LocalSlurm;
  let tmp: string;
  const savedConf = process.env.SLURM_CONF;

  before(async () => {
    assert.ok(existsSync(NATIVE), `${NATIVE} is built by npm test's set-up`);
    slurm = await LocalSlurm.start({ cpus: 4 });
    process.env.SLURM_CONF = slurm.conf;
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-slurm-output-'));
  });
  after(async () => {
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
    await slurm?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('slurm-<job>.out planted as a link while the job is held: the job is cancelled, the link not followed, the file outside untouched', async () => {
    const outside = path.join(tmp, 'outside.txt');
    writeFileSync(outside, SECRET);
    const real = localLoginHost();
    let planted: string | undefined;
    // The real login host, but once sbatch has queued the job held, slurm-<id>.out in its run folder
    // becomes a link to the outside file: as anyone who can write in the run folder could.
    const planting: LoginHost = {
      target: real.target,
      run: async (argv, opts = {}) => {
        const r = await real.run(argv, opts);
        const script = argv.find((w) => w.endsWith('/job.sbatch'));
        if (argv[0] === 'sbatch' && r.code === 0 && script) {
          planted = path.join(path.dirname(script), `slurm-${r.stdout.trim().split(';')[0]}.out`);
          symlinkSync(outside, planted);
        }
        return r;
      },
    };
    const dir = mkdtempSync(path.join(tmp, 'link-'));
    const req = slurmRunConfig(dir, { steps: 3 });
    const env = testLaunchEnvironment({
      clusters: new Map([['local', new SlurmCluster(planting)]]),
      localNative: NATIVE,
    });
    let message = '';
    await assert.rejects(
      launchRun({ kind: 'native', request: req }, { kind: 'slurm', loginHost: 'local' }, env),
      (e: Error) => ((message = e.message), true),
    );
    assert.ok(planted, 'sbatch queued a job and the link was planted');
    const jobId = /slurm-(\d+)\.out$/.exec(planted)![1];
    assert.equal(
      message,
      `job ${jobId} was submitted held but not released, so it was cancelled: ${planted} is a symbolic link, not a regular file: not written`,
    );
    const state = slurm.check(['squeue', '-h', '-t', 'all', '-j', jobId, '-o', '%T']).trim();
    assert.equal(state, 'CANCELLED', `job ${jobId} is not left in the queue or run`);
    assert.ok(lstatSync(planted).isSymbolicLink(), 'the link is left as it was, not followed or replaced');
    assert.equal(readFileSync(outside, 'utf8'), SECRET, 'nothing was written to the file behind the link');
    const [runDir] = readdirSync(path.join(dir, 'runs')).map((d) => path.join(dir, 'runs', d));
    const m = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as RunManifest;
    assert.equal(m.status, 'failed');
    assert.equal(m.end_reason, message);
  });
});
