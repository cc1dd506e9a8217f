import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import { rankLines, torchrunUnderSlurm } from '../../runs/slurm/slurm-ranks';
import launchSpecSchema from '../../core/schemas/launch-spec.schema.json';
import runConfigSchema from '../../core/schemas/run-config.schema.json';
import { scriptLine } from '../../runs/slurm/slurm-script';
import { commandLine } from '../../core/remote/remote-command';

const JOB_ENV = {
  SLURM_JOB_NUM_NODES: '4',
  SLURM_JOB_ID: '7321',
  MASTER_ADDR: 'gpu-node-01',
  MASTER_PORT: '27321',
  PATH: process.env.PATH ?? '',
};

/** What bash passes to a command given these words, with a job's SLURM variables set. */
function wordsInJob(line: string): string[] {
  const r = spawnSync('/bin/bash', ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8', env: JOB_ENV });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\0').slice(0, -1);
}

describe("SLURM ranks: the runtime, a person's script, a person's torchrun", () => {
  it("torchrun: the job decides nodes and rendezvous; the person's other options, script and arguments stay as written", () => {
    const argv = [
      'torchrun',
      '--nnodes',
      '2',
      '--nproc-per-node=8',
      '--standalone',
      '--rdzv_endpoint',
      'x:1',
      '--max_restarts=3',
      'train.py',
      '--nnodes',
      'not-an-option-of-torchrun',
      "it's $(x)",
    ];
    assert.deepEqual(wordsInJob(commandLine(torchrunUnderSlurm(argv))), [
      'torchrun',
      '--nnodes=4',
      '--rdzv_backend=c10d',
      '--rdzv_id=7321',
      '--rdzv_endpoint=gpu-node-01:27321',
      '--nproc-per-node=8',
      '--max_restarts=3',
      'train.py',
      '--nnodes',
      'not-an-option-of-torchrun',
      "it's $(x)",
    ]);
    const module = wordsInJob(
      commandLine(
        torchrunUnderSlurm([
          'python3',
          '-m',
          'torch.distributed.run',
          '--master_port=1234',
          '--nproc_per_node',
          '4',
          'train.py',
        ]),
      ),
    );
    assert.deepEqual(module, [
      'python3',
      '-m',
      'torch.distributed.run',
      '--nnodes=4',
      '--rdzv_backend=c10d',
      '--rdzv_id=7321',
      '--rdzv_endpoint=gpu-node-01:27321',
      '--nproc_per_node',
      '4',
      'train.py',
    ]);
    assert.throws(() => torchrunUnderSlurm(['python3', 'train.py']), /not a torchrun command/);
  });

  it('torchrun runs once per node; a job with several tasks per node is refused', () => {
    const lines = rankLines(
      { kind: 'torchrun', argv: ['torchrun', '--nproc_per_node=8', 'train.py'] },
      { mpi: 'pmix', tasksPerNode: 1 },
    ).map(scriptLine);
    const srun = lines.find((l) => l.startsWith('srun '))!;
    assert.ok(srun.startsWith('srun --ntasks-per-node=1 --kill-on-bad-exit=1 -- torchrun '), srun);
    assert.ok(
      lines.some((l) =>
        l.includes('export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"'),
      ),
    );
    assert.throws(
      () => rankLines({ kind: 'torchrun', argv: ['torchrun', 't.py'] }, { mpi: 'pmix', tasksPerNode: 8 }),
      /one task per node/,
    );
  });

  it("a person's script: one task per rank, each with RANK, LOCAL_RANK, WORLD_SIZE from SLURM, the command passed as words", () => {
    const lines = rankLines(
      { kind: 'env', argv: ['python3', 'train.py', '--name', "a'b; $(touch /tmp/x)"] },
      { mpi: 'pmix', tasksPerNode: 2 },
    ).map(scriptLine);
    const srun = lines.find((l) => l.startsWith('srun '))!.replace(/ &$/, '');
    const words = wordsInJob(srun);
    assert.deepEqual(words.slice(0, 3), ['srun', '--kill-on-bad-exit=1', '--']);
    // What one task runs: the sh -c text with SLURM's per-task variables, the person's words as "$@".
    const task = spawnSync(words[3], [...words.slice(4, 7), 'printf', '%s|', '$RANK', ...words.slice(8)], {
      encoding: 'utf8',
      env: {
        SLURM_PROCID: '3',
        SLURM_LOCALID: '1',
        SLURM_NTASKS: '8',
        SLURM_NTASKS_PER_NODE: '2',
        SLURM_NODEID: '1',
        PATH: process.env.PATH ?? '',
      },
    });
    assert.equal(task.status, 0, task.stderr);
    assert.equal(task.stdout, "$RANK|train.py|--name|a'b; $(touch /tmp/x)|", "the person's words arrive literally");
    const env = spawnSync(
      words[3],
      [...words.slice(4, 7), 'sh', '-c', 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK"'],
      {
        encoding: 'utf8',
        env: {
          SLURM_PROCID: '3',
          SLURM_LOCALID: '1',
          SLURM_NTASKS: '8',
          SLURM_NTASKS_PER_NODE: '2',
          SLURM_NODEID: '1',
          PATH: process.env.PATH ?? '',
        },
      },
    );
    assert.equal(env.stdout.trim(), '3 1 8 2 1');
  });

  it('the runtime: one task per rank through srun --mpi, --resume auto appended when continuing', () => {
    const srun = rankLines(
      { kind: 'mpi', argv: ['/opt/fsdp-train-native', '--run-dir', '/r'] },
      { mpi: 'pmi2', cpusPerTask: 4, tasksPerNode: 8 },
    )
      .map(scriptLine)
      .find((l) => l.startsWith('srun '))!;
    assert.equal(
      srun,
      'srun --mpi=pmi2 --kill-on-bad-exit=1 --cpus-per-task=4 -- /opt/fsdp-train-native --run-dir /r "${resume[@]}" &',
    );
  });

  it('a launch spec submits python or torchrun to SLURM; other launchers are refused with the reason', () => {
    const ok = loadLaunchSpec(
      'command: torchrun --nproc_per_node 8 train.py\nnnodes: 4\nslurm: {partition: gpu, gpus_per_node: 8}\n',
      '/w/t.fsdp-launch.yaml',
    );
    assert.deepEqual([ok.spec?.nnodes, ok.spec?.slurm?.partition], [4, 'gpu'], JSON.stringify(ok.problems));
    const refused = loadLaunchSpec('command: accelerate launch train.py\nslurm: {}\n', '/w/a.fsdp-launch.yaml');
    assert.equal(refused.spec, undefined);
    assert.match(
      refused.problems.map((p) => p.message).join(' '),
      /under SLURM a launch spec runs a python script .* accelerate/,
    );
  });

  it("a launch spec's slurm keys are a run config's launch.slurm keys (two schemas, one definition kept equal)", () => {
    const strip = (d: { description?: string }) => ({ ...d, description: undefined });
    assert.deepEqual(strip(launchSpecSchema.definitions.SlurmLaunch), strip(runConfigSchema.definitions.SlurmLaunch));
  });
});
