import assert from 'node:assert/strict';
import type { RunStartEvent } from '../../core/protocol/metrics';
import { describeEndWithoutRunEnd, signalIn } from '../../core/runs/run-end';

const GiB = 1024 ** 3;

function start(perRank: number, hosts: string[], hostMemory?: number): RunStartEvent {
  const plan = { params: 0, grads: 0, optimizer: 0, activations: 0, workspace: 0, comm: 0, other: 0, total: perRank };
  return {
    v: 1,
    type: 'run_start',
    time: 1,
    run_id: 'r',
    config: {},
    memory_plan: plan,
    world: { size: hosts.length, ranks: hosts.map((host, rank) => ({ rank, host, device: 'cpu' })) },
    ...(hostMemory !== undefined ? { host_memory: hostMemory } : {}),
  };
}

describe('why a run ended without run_end (core/runs/run-end.ts)', () => {
  it("signal 9 with the plan near the machine: the system may have run out of memory, the plan of the ranks on rank 0's host beside it", () => {
    const text = describeEndWithoutRunEnd({
      manifestReason: 'the runtime ended by signal 9',
      start: start(23.7 * GiB, ['a', 'a', 'b'], 11.8 * GiB),
      memory: { limit: 50 * GiB },
    });
    assert.equal(
      text,
      "the runtime ended by signal 9 (SIGKILL); the system may have run out of memory (the kernel's out-of-memory killer ends processes with signal 9): the memory plan needs 23.7 GiB per rank × 2 ranks on this host (47.4 GiB); the machine has 50.0 GiB",
    );
  });

  it('signal 9 with a 111 MiB plan on a 23.5 GiB machine is not blamed on memory', () => {
    const text = describeEndWithoutRunEnd({
      manifestReason: 'the runtime ended by signal 9',
      start: start(111 * 1024 ** 2, ['a']),
      memory: { limit: 23.5 * GiB, used: 300 * 1024 ** 2, usedWhat: 'its ranks last held (resident)' },
    });
    assert.equal(
      text,
      'the runtime ended by signal 9 (SIGKILL); not for want of memory (the memory plan needs 111 MiB; its ranks last held (resident) 300 MiB; the machine has 23.5 GiB): something sent it SIGKILL — a kill -9, a scheduler, or a stop that did not finish in time',
    );
  });

  it('signal 9 after the memory cgroup counted an OOM kill names the OOM killer, whatever the plan', () => {
    const text = describeEndWithoutRunEnd({
      manifestReason: 'the runtime ended by signal 9',
      start: start(10 * 1024 ** 2, ['a']),
      memory: {
        limit: 64 * 1024 ** 2,
        limitOf: 'its memory cgroup (/sys/fs/cgroup/memory/x)',
        used: 64 * 1024 ** 2,
        usedWhat: "the cgroup's peak was",
        oomKill: true,
      },
    });
    assert.equal(
      text,
      "the runtime ended by signal 9 (SIGKILL); the kernel's out-of-memory killer ended it: its memory cgroup counted an OOM kill (the memory plan needs 10.0 MiB; the cgroup's peak was 64.0 MiB; its memory cgroup (/sys/fs/cgroup/memory/x) has 64.0 MiB)",
    );
  });

  it('signal 9 with nothing known of memory says what SIGKILL may come from, without picking one', () => {
    assert.match(
      describeEndWithoutRunEnd({ manifestReason: 'the runtime ended by signal 9' }),
      /\(SIGKILL\); SIGKILL comes from the kernel's out-of-memory killer, a kill -9, a scheduler or a stop that did not finish in time; nothing here tells which$/,
    );
  });

  it('a run that vanished says so and quotes the last lines of stderr; memory only when it was short', () => {
    const text = describeEndWithoutRunEnd({
      pgid: 4242,
      start: start(2 * GiB, ['a']),
      memory: { limit: 8 * GiB },
      stderrTail: 'loading\n\nSegmentation fault\n',
    });
    assert.equal(
      text,
      "the trainer's processes (group 4242) ended without reporting the end of the run; stderr.log ends with: loading ⏎ Segmentation fault",
    );
    const short = describeEndWithoutRunEnd({ pgid: 4242, start: start(7.5 * GiB, ['a']), memory: { limit: 8 * GiB } });
    assert.equal(
      short,
      "the trainer's processes (group 4242) ended without reporting the end of the run; memory was short: the memory plan needs 7.5 GiB; the machine has 8.0 GiB",
    );
  });

  it("quotes what the trainer said, not fsdp-train's line saying where the run is", () => {
    const text = describeEndWithoutRunEnd({
      manifestReason: 'the runtime refused the config before the first step (exit 2)',
      stderrTail: 'fsdp-train: run r-1 in /tmp/runs/r-1\nconfig.json data.train: /x.tok: No such file or directory\n',
    });
    assert.equal(
      text,
      'the runtime refused the config before the first step (exit 2); stderr.log ends with: config.json data.train: /x.tok: No such file or directory',
    );
    assert.doesNotMatch(
      describeEndWithoutRunEnd({
        manifestReason: 'the runtime ended by signal 9',
        stderrTail: 'fsdp-train: run r-1 in /tmp/runs/r-1\n',
      }),
      /stderr/,
    );
  });

  it('a refused config is not blamed on memory', () => {
    const text = describeEndWithoutRunEnd({
      manifestReason: 'the runtime refused the config before the first step (exit 2)',
      start: start(7.9 * GiB, ['a']),
      memory: { limit: 8 * GiB },
    });
    assert.equal(text, 'the runtime refused the config before the first step (exit 2)');
  });

  it('reads signal numbers', () => {
    assert.equal(signalIn('stopped by signal 15'), 15);
    assert.equal(signalIn('exit 2'), undefined);
  });
});
