// The command lines of torchrun, accelerate launch, deepspeed, mpirun and plain python, as
// FSDP Studio reads them to launch a person's script (no shell; ranks; script; config; stop signal).
import assert from 'node:assert/strict';
import {
  commandForConfig,
  readCommand,
  splitCommand,
  stopSignalOf,
  worldSizeOfCommand,
} from '../../core/config/user-command';

const read = (line: string) => {
  const s = splitCommand(line);
  if ('error' in s) throw new Error(s.error);
  return readCommand(s.argv);
};

describe("a person's training command", () => {
  it('splits words as a shell quotes them, without running one', () => {
    assert.deepEqual(splitCommand(`python3 train.py --name 'my run' --note "it's \\"quoted\\"" a\\ b`), {
      argv: ['python3', 'train.py', '--name', 'my run', '--note', 'it\'s "quoted"', 'a b'],
    });
    assert.deepEqual(splitCommand('torchrun \\\n  --nproc_per_node 2 \\\n  train.py'), {
      argv: ['torchrun', '--nproc_per_node', '2', 'train.py'],
    });
    assert.deepEqual(splitCommand(`python x.py --lit '$HOME;|'`), { argv: ['python', 'x.py', '--lit', '$HOME;|'] });
    for (const bad of [
      'python x.py | tee log',
      'python x.py; rm -rf /',
      'python x.py > out',
      'python $SCRIPT',
      'python "$(id)"',
      'python `id`',
      `python 'open`,
      '   ',
    ]) {
      assert.ok('error' in splitCommand(bad), bad);
    }
    assert.match(
      (splitCommand('a && b') as { error: string }).error,
      /"&" at character 3: a launch spec runs one command without a shell/,
    );
  });

  it('torchrun and python -m torch.distributed.run: --nproc_per_node, --nnodes (a range counts as its most), the script', () => {
    const t = read('torchrun --nnodes 1:2 --nproc_per_node=4 --rdzv_backend c10d --standalone train.py --lr 3e-4');
    assert.deepEqual(
      { launcher: t.launcher, n: t.nprocPerNode, nodes: t.nnodes, script: t.script },
      { launcher: 'torchrun', n: 4, nodes: 2, script: 'train.py' },
    );
    assert.equal(worldSizeOfCommand(t), 8);
    const m = read('python3 -m torch.distributed.run --nproc-per-node 2 examples/train.py');
    assert.deepEqual([m.launcher, m.nprocPerNode, m.script], ['torchrun', 2, 'examples/train.py']);
    assert.equal(
      read('torchrun --nproc_per_node gpu train.py').nprocPerNode,
      undefined,
      '"gpu" is known only on the host',
    );
  });

  it('accelerate launch: --num_processes is the total over --num_machines; --config_file', () => {
    const a = read(
      'accelerate launch --config_file fsdp.yaml --num_processes 8 --num_machines 2 --mixed_precision bf16 train.py --epochs 1',
    );
    assert.deepEqual(
      [a.launcher, a.nprocPerNode, a.nnodes, a.configFile, a.script],
      ['accelerate', 4, 2, 'fsdp.yaml', 'train.py'],
    );
    const b = read('accelerate launch --multi_gpu --config_file=cfg.yaml run.py');
    assert.deepEqual([b.configFile, b.script, b.nprocPerNode], ['cfg.yaml', 'run.py', undefined]);
  });

  it("deepspeed: --num_gpus, --num_nodes, and the script's own --deepspeed config", () => {
    const d = read(
      'deepspeed --num_gpus 2 --num_nodes 1 --master_port 29600 train.py --deepspeed ds_config.json --lr 1',
    );
    assert.deepEqual(
      [d.launcher, d.nprocPerNode, d.nnodes, d.script, d.configFile],
      ['deepspeed', 2, 1, 'train.py', 'ds_config.json'],
    );
    assert.equal(read('deepspeed train.py --deepspeed_config=zero3.json').configFile, 'zero3.json');
  });

  it('mpirun -n N; plain python takes its ranks from the spec', () => {
    const mpi = read('mpirun --allow-run-as-root -n 2 python3 train.py');
    assert.deepEqual([mpi.launcher, mpi.nprocPerNode], ['mpi', 2]);
    const py = read('/usr/bin/python3 -u train.py --steps 10');
    assert.deepEqual([py.launcher, py.script], ['python', 'train.py']);
    assert.equal(worldSizeOfCommand(py, 2), 2);
    assert.equal(read('./run.sh').launcher, 'other');
  });

  it('stops every launcher with SIGTERM to its process group', () => {
    for (const l of ['torchrun', 'accelerate', 'deepspeed', 'mpi', 'python', 'other'] as const)
      assert.equal(stopSignalOf(l), 'SIGTERM');
  });

  it('launches a DeepSpeed or accelerate config with its own launcher around the script', () => {
    assert.deepEqual(commandForConfig('deepspeed', 'ds_config.json', 'train.py', 2), [
      'deepspeed',
      '--num_gpus',
      '2',
      'train.py',
      '--deepspeed',
      'ds_config.json',
    ]);
    assert.deepEqual(commandForConfig('accelerate', 'fsdp.yaml', 'train.py', 2), [
      'accelerate',
      'launch',
      '--config_file',
      'fsdp.yaml',
      'train.py',
    ]);
    // What it makes reads back as that launcher, with that config and script.
    const back = readCommand(commandForConfig('deepspeed', 'ds.json', 'a.py', 4));
    assert.deepEqual(
      [back.launcher, back.nprocPerNode, back.script, back.configFile],
      ['deepspeed', 4, 'a.py', 'ds.json'],
    );
  });
});
