import assert from 'node:assert/strict';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { launchRun, launchTargetOf, type RunSpec } from '../../runs/launch/launch-run';
import { testLaunchEnvironment } from '../harness/launch-environment';

// The one launch door: which strategy a run takes follows from what runs and where its config,
// launch spec or (for a resume) run.json says it runs. The strategies themselves run against real
// processes, sshd and SLURM in test/runs/ (sharded-launch, command-launch, hosts, slurm), all
// through launchRun.
const native = (launch: Partial<ResolvedRunConfig['launch']>): RunSpec => ({
  kind: 'native',
  request: { configPath: '/w/r.fsdp.yaml', config: { launch } as unknown as ResolvedRunConfig },
});
const command = (spec: Partial<ResolvedLaunchSpec>): RunSpec => ({
  kind: 'command',
  request: { specPath: '/w/t.fsdp-launch.yaml', spec: { target: 'local', ...spec } as ResolvedLaunchSpec },
});

describe('launchRun: one door for every kind of run', () => {
  it('native runs: this machine, an SSH host, several hosts, SLURM from a login host', () => {
    assert.deepEqual(launchTargetOf(native({})), { kind: 'local' });
    assert.deepEqual(launchTargetOf(native({ target: 'gpu-box' })), { kind: 'ssh', host: 'gpu-box' });
    assert.deepEqual(launchTargetOf(native({ hosts: ['a', 'b'], nnodes: 2 })), { kind: 'hosts', hosts: ['a', 'b'] });
    assert.deepEqual(launchTargetOf(native({ target: 'login', slurm: {} })), { kind: 'slurm', loginHost: 'login' });
  });

  it("a person's command: this machine, an SSH host, SLURM", () => {
    assert.deepEqual(launchTargetOf(command({})), { kind: 'local' });
    assert.deepEqual(launchTargetOf(command({ target: 'gpu-box' })), { kind: 'ssh', host: 'gpu-box' });
    assert.deepEqual(launchTargetOf(command({ target: 'login', slurm: {} as ResolvedLaunchSpec['slurm'] })), {
      kind: 'slurm',
      loginHost: 'login',
    });
  });

  it('a run that was a SLURM job resumes as one, whatever its config says now', () => {
    const previous = { slurm: { script: 'job.sbatch', jobs: ['7'] } } as RunManifest;
    assert.deepEqual(launchTargetOf(native({ target: 'login' }), previous), { kind: 'slurm', loginHost: 'login' });
    assert.deepEqual(launchTargetOf(command({}), previous), { kind: 'slurm', loginHost: 'local' });
  });

  it('refuses what has no strategy, or what this side cannot provide, saying what to do', async () => {
    await assert.rejects(
      launchRun(command({}), { kind: 'hosts', hosts: ['a', 'b'] }, testLaunchEnvironment({})),
      /launch spec runs on one host or as a SLURM job/,
    );
    await assert.rejects(
      launchRun(native({}), { kind: 'local' }, testLaunchEnvironment({})),
      /fsdp-train on this machine is not available/,
    );
  });
});
