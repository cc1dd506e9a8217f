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
