import assert from 'node:assert/strict';
import type { RunStartEvent } from '../../core/protocol/metrics';
import { describeEndWithoutRunEnd, memoryBeside, signalIn } from '../../core/runs/run-end';

const GiB = 1024 ** 3;

function start(perRank: number, hosts: string[], hostMemory?: number): RunStartEvent {
  const plan = { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: perRank };
  return {
    v: 1, type: 'run_start', time: 1, run_id: 'r', config: {}, memory_plan: plan,
    world: { size: hosts.length, ranks: hosts.map((host, rank) => ({ rank, host, device: 'cpu' })) },
    ...(hostMemory !== undefined ? { host_memory: hostMemory } : {}),
  };
}

describe('why a run ended without run_end (core/runs/run-end.ts)', () => {
  it('signal 9 says the system may have run out of memory, with the plan of the ranks on rank 0\'s host beside the machine', () => {
    const text = describeEndWithoutRunEnd({ manifestReason: 'the runtime ended by signal 9', start: start(23.7 * GiB, ['a', 'a', 'b'], 11.8 * GiB), machineMemory: 64 * GiB });
    assert.equal(
      text,
      "the runtime ended by signal 9 (SIGKILL); the system may have run out of memory (the kernel's out-of-memory killer ends processes with signal 9): the memory plan needs 23.7 GiB per rank × 2 ranks on this host (47.4 GiB); the machine has 11.8 GiB",
    );
  });

  it('a run that vanished says so, offers memory as one cause, and quotes the last lines of stderr.log', () => {
    const text = describeEndWithoutRunEnd({ pgid: 4242, start: start(2 * GiB, ['a']), machineMemory: 8 * GiB, stderrTail: 'loading\n\nSegmentation fault\n' });
    assert.equal(text, "the trainer's processes (group 4242) ended without reporting the end of the run; if the system ran out of memory: the memory plan needs 2.0 GiB; the machine has 8.0 GiB; stderr.log ends with: loading ⏎ Segmentation fault");
  });

  it('quotes what the trainer said, not fsdp-train\'s line saying where the run is', () => {
    const text = describeEndWithoutRunEnd({ manifestReason: 'the runtime refused the config before the first step (exit 2)', stderrTail: 'fsdp-train: run r-1 in /tmp/runs/r-1\nconfig.json data.train: /x.tok: No such file or directory\n' });
    assert.equal(text, 'the runtime refused the config before the first step (exit 2); stderr.log ends with: config.json data.train: /x.tok: No such file or directory');
    assert.doesNotMatch(describeEndWithoutRunEnd({ manifestReason: 'the runtime ended by signal 9', stderrTail: 'fsdp-train: run r-1 in /tmp/runs/r-1\n' }), /stderr/);
  });

  it('a refused config is not blamed on memory', () => {
    const text = describeEndWithoutRunEnd({ manifestReason: 'the runtime refused the config before the first step (exit 2)', start: start(GiB, ['a']), machineMemory: 8 * GiB });
    assert.equal(text, 'the runtime refused the config before the first step (exit 2)');
  });

  it('reads signal numbers and tolerates a run that never started', () => {
    assert.equal(signalIn('stopped by signal 15'), 15);
    assert.equal(signalIn('exit 2'), undefined);
    assert.equal(memoryBeside(undefined, 8 * GiB), undefined);
    assert.match(describeEndWithoutRunEnd({ manifestReason: 'the runtime ended by signal 9' }), /may have run out of memory \(the kernel's out-of-memory killer ends processes with signal 9\)$/);
  });
});
