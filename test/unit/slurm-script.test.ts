import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolveRunConfig, type ResolvedRunConfig } from '../../core/config/run-config';
import {
  batchScript,
  directiveWord,
  outputPattern,
  parseSbatchOutput,
  sbatchArgv,
  scriptLine,
  slurmJobShape,
  stopCommand,
} from '../../runs/slurm/slurm-script';

function config(launch: object, name = 'tiny'): ResolvedRunConfig {
  return resolveRunConfig(
    {
      name,
      model: { d_model: 8, n_layers: 1, n_heads: 1, vocab_size: 256, max_seq_len: 8 },
      data: { train: 'x.tok' },
      training: { batch_size_per_gpu: 1, max_steps: 1 },
      launch,
    } as never,
    '/tmp',
  );
}

/** The #SBATCH lines of a script, in order. */
function directives(script: string): string[] {
  return script
    .split('\n')
    .filter((l) => l.startsWith('#SBATCH '))
    .map((l) => l.slice(8));
}

/** What bash makes of a shell line: the words it passes to printf. */
function bashWords(line: string): string[] {
  const r = spawnSync('/bin/bash', ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\0').slice(0, -1);
}

describe('SLURM batch script', () => {
  const hostile = `it's "quoted" $(touch /tmp/fsdp-pwned) \`id\` #not-a-comment \\ ; &&`;

  it('takes the job shape from launch: nodes × tasks per node, one GPU per task on CUDA', () => {
    const s = slurmJobShape(
      config({ device: 'cuda', nproc_per_node: 8, nnodes: 4, slurm: { partition: 'gpu', time_limit: '04:00:00' } }),
    );
    assert.deepEqual(
      [s.nodes, s.tasksPerNode, s.gpusPerNode, s.partition, s.timeLimit, s.mpi, s.signalBeforeLimitS, s.requeue],
      [4, 8, 8, 'gpu', '04:00:00', 'pmix', 120, true],
    );
    const cpu = slurmJobShape(config({ nproc_per_node: 2, slurm: {} }));
    assert.equal(cpu.gpusPerNode, undefined, 'no GPUs asked for a CPU run');
    assert.equal(cpu.jobName, 'tiny');
    assert.equal(
      slurmJobShape(config({ device: 'cuda', nproc_per_node: 2, slurm: { gpus_per_node: 4, job_name: 'mine' } }))
        .gpusPerNode,
      4,
    );
  });

  it('a config without launch.slurm resolves without one (absent means not on SLURM)', () => {
    assert.equal(config({ nproc_per_node: 2 }).launch.slurm, undefined);
    assert.equal(config({ slurm: {} }).launch.slurm?.mpi, 'pmix', 'a present section gets its defaults');
  });

  it('writes the shape as #SBATCH lines before any command, and runs one srun task per rank', () => {
    const script = batchScript({
      shape: slurmJobShape(
        config({
          device: 'cuda',
          nproc_per_node: 4,
          nnodes: 2,
          slurm: {
            partition: 'a100',
            account: 'proj',
            qos: 'high',
            time_limit: 90,
            cpus_per_task: 8,
            extra_directives: ['--exclusive', '--constraint=a100&ib'],
          },
        }),
      ),
      runDir: '/scratch/runs/r1',
      ranks: {
        kind: 'mpi',
        argv: [
          '/opt/fsdp/fsdp-train-native',
          '--config',
          '/scratch/runs/r1/config.json',
          '--run-dir',
          '/scratch/runs/r1',
        ],
      },
      about: ['run r1'],
    });
    assert.ok(script.startsWith('#!/bin/bash\n'));
    assert.deepEqual(directives(script), [
      '--job-name=tiny',
      '--chdir=/scratch/runs/r1',
      '--output=/scratch/runs/r1/slurm-%j.out',
      '--open-mode=append',
      '--nodes=2',
      '--ntasks-per-node=4',
      '--gpus-per-node=4',
      '--cpus-per-task=8',
      '--partition=a100',
      '--account=proj',
      '--qos=high',
      '--time=90',
      '--requeue',
      '--signal=B:USR1@120',
      '--exclusive',
      '"--constraint=a100&ib"',
    ]);
    const lines = script.split('\n');
    const firstCommand = lines.findIndex((l, i) => i > 0 && l.trim() !== '' && !l.startsWith('#'));
    assert.ok(
      lines.slice(firstCommand).every((l) => !l.startsWith('#SBATCH')),
      'sbatch reads directives only before the first command',
    );
    const srun = lines.find((l) => l.startsWith('srun '))!;
    assert.deepEqual(bashWords(srun.replace(' "${resume[@]}" &', '')), [
      'srun',
      '--mpi=pmix',
      '--kill-on-bad-exit=1',
      '--cpus-per-task=8',
      '--',
      '/opt/fsdp/fsdp-train-native',
      '--config',
      '/scratch/runs/r1/config.json',
      '--run-dir',
      '/scratch/runs/r1',
    ]);
    assert.equal(spawnSync('/bin/bash', ['-n'], { input: script }).status, 0, 'bash parses the script');
  });

  it('asks for no signal when the time-limit save is off, and no requeue when it is not wanted', () => {
    const d = directives(
      batchScript({
        shape: slurmJobShape(config({ slurm: { signal_before_limit_s: 0, requeue: false } })),
        runDir: '/r',
        ranks: { kind: 'mpi', argv: ['t'] },
        about: [],
      }),
    );
    assert.ok(!d.some((l) => l.startsWith('--signal')), d.join(' '));
    assert.ok(d.includes('--no-requeue'));
  });

  it('keeps hostile paths, names and arguments inert: one literal word each in the shell', () => {
    const runDir = `/runs/${hostile}`;
    const script = batchScript({
      shape: { ...slurmJobShape(config({ slurm: {} })), jobName: hostile, partition: hostile },
      runDir,
      ranks: { kind: 'mpi', argv: ['/bin/train', '--run-dir', runDir] },
      about: [`config ${hostile}\nrm -rf ~`],
    });
    assert.equal(spawnSync('/bin/bash', ['-n'], { input: script }).status, 0);
    const srun = script.split('\n').find((l) => l.startsWith('srun '))!;
    assert.deepEqual(bashWords(srun.replace(' "${resume[@]}" &', '')).slice(-3), ['/bin/train', '--run-dir', runDir]);
    assert.ok(
      !script.split('\n').some((l) => l.startsWith('rm -rf')),
      'a line break in a comment does not start a command',
    );
    assert.ok(script.includes(`#SBATCH --job-name=${directiveWord(hostile)}`));
  });

  it('exports the environment the ranks need, values as literal words', () => {
    const value = `/runs/it's "x" $(touch /tmp/fsdp-pwned)`;
    const script = batchScript({
      shape: slurmJobShape(config({ slurm: {} })),
      runDir: '/r',
      ranks: { kind: 'env', argv: ['python3', 't.py'] },
      env: { FSDP_STUDIO_RUN_DIR: value, PYTHONPATH: '/p' },
      about: [],
    });
    const exports = script
      .split('\n')
      .filter((l) => l.startsWith('export FSDP') || l.startsWith('export PYTHONPATH'))
      .join('\n');
    const r = spawnSync('/bin/bash', ['-c', `${exports}\nprintf '%s|%s' "$FSDP_STUDIO_RUN_DIR" "$PYTHONPATH"`], {
      encoding: 'utf8',
    });
    assert.equal(r.stdout, `${value}|/p`);
    assert.throws(
      () =>
        batchScript({
          shape: slurmJobShape(config({ slurm: {} })),
          runDir: '/r',
          ranks: { kind: 'env', argv: ['t'] },
          env: { 'A;B': 'x' },
          about: [],
        }),
      /not an environment variable name/,
    );
  });

  it('refuses an extra directive that breaks the run, whatever checked the config before', () => {
    for (const extra of ['--wait', '--array=0-1', '-d afterok:3', '--time=5'])
      assert.throws(
        () =>
          batchScript({
            shape: slurmJobShape(config({ slurm: { extra_directives: ['--exclusive', extra] } })),
            runDir: '/r',
            ranks: { kind: 'env', argv: ['t'] },
            about: [],
          }),
        /launch\.slurm\.extra_directives: ".*" sets --/,
        extra,
      );
    assert.match(
      batchScript({
        shape: slurmJobShape(config({ slurm: { extra_directives: ['--exclusive'] } })),
        runDir: '/r',
        ranks: { kind: 'env', argv: ['t'] },
        about: [],
      }),
      /^#SBATCH --exclusive$/m,
    );
  });

  it("a person's command: the supervisor around srun, run in the command's folder, stopped through the batch shell (USR2) without signalling srun", () => {
    const script = batchScript({
      shape: slurmJobShape(config({ nproc_per_node: 2, slurm: {} })),
      runDir: '/runs/r',
      ranks: { kind: 'env', argv: ['python3', 'train.py'] },
      cwd: '/home/me/my code',
      supervisor: ['python3', '/opt/fsdp_studio/supervise.py', '--run-dir', '/runs/r', '--'],
      about: [],
    });
    const lines = script.split('\n');
    const run = lines.find((l) => l.includes(' srun '))!;
    assert.ok(
      run.startsWith(
        'python3 /opt/fsdp_studio/supervise.py --run-dir /runs/r -- srun --kill-on-bad-exit=1 -- /bin/sh -c ',
      ),
      run,
    );
    assert.ok(
      lines.indexOf("cd -- '/home/me/my code' || exit 1") >= 0 &&
        lines.indexOf("cd -- '/home/me/my code' || exit 1") < lines.indexOf(run),
    );
    const usr2 = lines.find((l) => l.endsWith("' USR2"))!;
    assert.match(
      usr2,
      /kill -TERM "\$srun_pid"; scancel --signal=TERM "\$SLURM_JOB_ID"/,
      'the supervisor notes the stop, the ranks get SIGTERM',
    );
    assert.deepEqual(stopCommand('TERM'), ['scancel', '--batch', '--signal=USR2']);
    assert.deepEqual(stopCommand('USR1'), ['scancel', '--signal=USR1']);
    assert.ok(
      lines.some((l) => l === 'if [ "$time_up" = 1 ]; then'),
      'a command at its time limit is requeued whatever it exits with',
    );
    assert.equal(spawnSync('/bin/bash', ['-n'], { input: script }).status, 0);
  });

  it('quotes #SBATCH values the way sbatch reads them, and refuses line breaks', () => {
    assert.equal(directiveWord('gpu'), 'gpu');
    assert.equal(directiveWord('01:00:00'), '01:00:00');
    assert.equal(directiveWord('my job'), '"my job"');
    assert.equal(directiveWord('a"b\\c #d'), '"a\\"b\\\\c #d"');
    assert.throws(() => directiveWord('a\nb'), /line break/);
    assert.throws(() => scriptLine({ directive: '--x;y', value: 1 }), /not an sbatch option/);
    assert.throws(() => scriptLine({ shell: ['a\nb'] }), /line break/);
    assert.equal(scriptLine({ comment: 'two\nlines' }), '# two lines');
  });

  it('writes a literal % in the run folder as %% in the output pattern', () => {
    assert.equal(outputPattern('/runs/100%/r', 'slurm-%j.out'), '/runs/100%%/r/slurm-%j.out');
  });

  it('submits held, passes --resume auto to the script, and reads the job id sbatch answers', () => {
    assert.deepEqual(sbatchArgv('/r/job.sbatch', { hold: true, resume: true }), [
      'sbatch',
      '--parsable',
      '--hold',
      '--',
      '/r/job.sbatch',
      '--resume',
      'auto',
    ]);
    assert.equal(parseSbatchOutput('1234\n'), '1234');
    assert.equal(parseSbatchOutput('1234;cluster2\n'), '1234');
    assert.equal(parseSbatchOutput('sbatch: error: Batch job submission failed'), undefined);
  });
});
