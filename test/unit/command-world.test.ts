// The ranks a person's command starts, as run.json's world (issue 39, item 3): counted from the
// launcher's own options, since the supervisor starts one launcher process that starts the ranks.
import assert from 'node:assert/strict';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import { manifestWorld } from '../../runs/launch/command-launcher';

function worldOf(command: string, extra = '') {
  const { spec, problems } = loadLaunchSpec(`command: ${JSON.stringify(command)}\n${extra}`, '/w/x.fsdp-launch.yaml');
  assert.ok(spec, JSON.stringify(problems));
  return manifestWorld(spec);
}

describe("run.json's world for a person's command", () => {
  it('torchrun --nproc_per_node 2 (and the --nproc-per-node=N spelling) starts 2 ranks on one node', () => {
    assert.deepEqual(worldOf('torchrun --nproc_per_node 2 run_clm.py --model_name_or_path gpt2'), {
      size: 2,
      nproc_per_node: 2,
    });
    assert.deepEqual(worldOf('torchrun --nproc-per-node=4 --nnodes 2 train.py'), {
      size: 8,
      nproc_per_node: 4,
      nnodes: 2,
    });
  });

  it('accelerate launch --num_processes, deepspeed --num_gpus, mpirun -np', () => {
    assert.equal(worldOf('accelerate launch --num_processes 3 train.py').size, 3);
    assert.equal(worldOf('deepspeed --num_gpus 2 train.py --deepspeed ds.json').size, 2);
    assert.equal(worldOf('mpirun -np 4 python train.py').size, 4);
  });

  it("a plain python command: the spec's nproc_per_node copies; one when it says none", () => {
    assert.deepEqual(worldOf('python train.py', 'nproc_per_node: 2\n'), { size: 2, nproc_per_node: 2 });
    assert.deepEqual(worldOf('python train.py'), { size: 1 });
    assert.deepEqual(worldOf('torchrun train.py'), { size: 1 });
  });
});

// deepspeed counted as its runner counts (deepspeed/launcher/runner.py): a hostfile's slots, then
// --include/--exclude, --num_nodes, --num_gpus; without a hostfile this host's GPUs, which only the
// ranks can count unless --num_gpus, --include localhost:… or the spec's CUDA_VISIBLE_DEVICES say.
describe('how many ranks deepspeed starts', () => {
  const files = new Map<string, string>();
  const readFile = (f: string) => files.get(f);
  function world(command: string, extra = '') {
    const { spec, problems } = loadLaunchSpec(
      `command: ${JSON.stringify(command)}\ncwd: /w\n${extra}`,
      '/w/x.fsdp-launch.yaml',
      readFile,
    );
    assert.ok(spec, JSON.stringify(problems));
    return { size: spec.worldSize, decidedBy: spec.worldDecidedBy, manifest: manifestWorld(spec) };
  }
  afterEach(() => files.clear());

  it('without --num_gpus and nothing else: every GPU of the host, counted when the ranks report (not 1)', () => {
    const w = world('deepspeed train.py --deepspeed ds.json');
    assert.equal(w.size, undefined);
    assert.equal(w.decidedBy, 'all GPUs of the host');
    assert.deepEqual(w.manifest, { size: 1, counted: 'launcher' });
    assert.equal(
      world('deepspeed --exclude localhost:1 train.py').decidedBy,
      'all GPUs of the host but --exclude localhost:1',
    );
  });

  it("the spec's CUDA_VISIBLE_DEVICES (no other resource option): its devices", () => {
    const w = world('deepspeed train.py', 'env:\n  CUDA_VISIBLE_DEVICES: "0,2,3"\n');
    assert.equal(w.size, 3);
    assert.deepEqual(w.manifest, { size: 3 });
    // --num_gpus wins over it, as the runner ignores the variable then.
    assert.equal(world('deepspeed --num_gpus 1 train.py', 'env:\n  CUDA_VISIBLE_DEVICES: "0,1"\n').size, 1);
  });

  it('--include localhost:0,2 picks two slots; --num_gpus N is N', () => {
    assert.equal(world('deepspeed --include localhost:0,2 train.py').size, 2);
    assert.equal(world('deepspeed -i=localhost:1 train.py').size, 1);
    assert.equal(world('deepspeed --num_gpus 4 train.py').size, 4);
  });

  it("a hostfile's slots, filtered by --include/--exclude, --num_nodes and --num_gpus", () => {
    files.set('/w/hostfile', '# two workers\nworker-0 slots=8\nworker-1 slots=4\n\n');
    assert.equal(world('deepspeed --hostfile hostfile train.py').size, 12);
    assert.equal(world('deepspeed -H /w/hostfile --num_nodes 1 train.py').size, 8);
    assert.equal(world('deepspeed --hostfile hostfile --num_gpus 2 train.py').size, 4);
    assert.equal(world('deepspeed --hostfile hostfile --include worker-0@worker-1:0,2 train.py').size, 10);
    assert.equal(world('deepspeed --hostfile hostfile --exclude worker-1 train.py').size, 8);
    assert.equal(world('deepspeed --hostfile hostfile --exclude worker-0:0,1 train.py').size, 10);
    // The hostfile is the pool: CUDA_VISIBLE_DEVICES is not read then.
    assert.equal(world('deepspeed --hostfile hostfile train.py', 'env:\n  CUDA_VISIBLE_DEVICES: "0"\n').size, 12);
  });

  it("deepspeed's default hostfile /job/hostfile is read where it is; a bad one is deepspeed's refusal, not a count", () => {
    files.set('/job/hostfile', 'node-a slots=2\nnode-b slots=2\n');
    assert.equal(world('deepspeed train.py').size, 4);
    files.set('/w/bad', 'node-a 2\n');
    assert.match(
      world('deepspeed -H bad train.py').decidedBy ?? '',
      /refuses the hostfile bad: line 1 is not "HOST slots=N"/,
    );
  });

  it('on an SSH host the hostfile is not read here: the ranks count it', () => {
    const w = world('deepspeed --hostfile /etc/hosts.ds train.py', 'target: gpu-box\n');
    assert.equal(w.size, undefined);
    assert.equal(w.decidedBy, 'the slots of the hostfile /etc/hosts.ds on the host');
  });
});
