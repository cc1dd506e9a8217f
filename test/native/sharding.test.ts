// Sharded data parallelism over mpirun: every strategy at 1, 2 and 4 ranks trains the same model
// on the same global batch (8 sequences a step, split 8 / 4+4 / 2+2+2+2), and must give the
// 1-rank loss sequence; the runtime's own allocator must show each rank holding exactly what its
// strategy shards, and every per-category peak the plan (native/MEMORY.md) predicts.
//
// Bitwise where the reduction order is fixed: with 2 ranks every gradient element is reduced by
// one addition, a + b, whose result does not depend on the algorithm — so all strategies agree
// bit for bit at 2 ranks. Between 1 and N ranks the order of the sums differs (one matrix product
// over 8 sequences against N products added), and at 4 ranks MPI's all-reduce and its
// reduce-scatter may group the 4 terms differently: there the bound is 1e-6 relative.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { eventsOf, tempDir } from './train-runs';
import {
  maxRelativeDifference,
  outcomeOf,
  residentByRank,
  runSharded,
  stepsByRank,
  STRATEGIES,
  type RunOutcome,
  type ShardedRun,
} from './sharding-runs';

const CATEGORIES = ['params', 'grads', 'optimizer', 'activations', 'workspace', 'comm', 'other'] as const;

/** The runtime's units for the test model (MEMORY.md "Parameters and units"): V 256, C 32, S 32, L 2, F 128, tied. */
const UNIT_NUMELS = [
  (256 + 32) * 32,
  4 * 32 * 32 + 2 * 32 * 128 + 9 * 32 + 128,
  4 * 32 * 32 + 2 * 32 * 128 + 9 * 32 + 128,
  2 * 32,
];
/** ΣS: the elements of one rank's shards over D ranks, each unit cut in D equal (padded) pieces. */
const shardElements = (D: number) => UNIT_NUMELS.reduce((sum, p) => sum + Math.ceil(p / D), 0);
const padded = (u: number, D: number) => Math.ceil(UNIT_NUMELS[u] / D) * D;

function plan(): Array<[string, ShardedRun]> {
  const runs: Array<[string, ShardedRun]> = [['1 rank', { ranks: 1 }]];
  for (const ranks of [2, 4]) {
    for (const strategy of STRATEGIES) {
      // HYBRID_SHARD over 4 ranks: two emulated nodes of 2 (shard within, replicate across).
      runs.push([
        `${strategy} ×${ranks}`,
        { ranks, strategy, args: strategy === 'HYBRID_SHARD' && ranks === 4 ? ['--ranks-per-node', '2'] : [] },
      ]);
    }
  }
  runs.push(
    [
      'FULL_SHARD ×4 forward_prefetch',
      { ranks: 4, strategy: 'FULL_SHARD', extra: { fsdp: { forward_prefetch: true } } },
    ],
    [
      'FULL_SHARD ×4 BACKWARD_POST',
      { ranks: 4, strategy: 'FULL_SHARD', extra: { fsdp: { backward_prefetch: 'BACKWARD_POST' } } },
    ],
    ['FULL_SHARD ×4 no prefetch', { ranks: 4, strategy: 'FULL_SHARD', extra: { fsdp: { backward_prefetch: 'NONE' } } }],
    ['FULL_SHARD ×2 cpu_offload', { ranks: 2, strategy: 'FULL_SHARD', extra: { fsdp: { cpu_offload: true } } }],
    [
      'SHARD_OPTIMIZER ×2 cpu_offload',
      { ranks: 2, strategy: 'SHARD_OPTIMIZER', extra: { fsdp: { cpu_offload: true } } },
    ],
    [
      'SHARD_GRAD_OP ×2 accumulating 2 micro-steps',
      { ranks: 2, strategy: 'SHARD_GRAD_OP', extra: { training: { gradient_accumulation_steps: 2 } } },
    ],
    ['zero_stage 3 ×2', { ranks: 2, extra: { fsdp: { zero_stage: 3 } } }],
  );
  return runs;
}

describe('sharded data parallelism over mpirun: every strategy at 1, 2 and 4 ranks', function () {
  this.timeout(900_000);
  let dir: string;
  const runs = new Map<string, RunOutcome>();
  const run = (name: string) => {
    const r = runs.get(name);
    assert.ok(r, `no run named ${name}`);
    return r;
  };

  before(async () => {
    dir = tempDir('sharding');
    for (const [name, spec] of plan())
      runs.set(name, await outcomeOf(await runSharded(dir, name.replace(/\W+/g, '-'), spec)));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('gives the 1-rank loss sequence with 2 and 4 ranks under every strategy, within 1e-6 relative', () => {
    const reference = run('1 rank').losses;
    assert.equal(reference.size, 6);
    const worst: string[] = [];
    for (const [name, r] of runs) {
      const d = maxRelativeDifference(reference, r.losses);
      if (d > 1e-6) worst.push(`${name}: ${d.toExponential(2)}`);
    }
    assert.deepEqual(worst, []);
  });

  it('is bitwise identical across strategies with 2 ranks (one addition per element: the order is fixed)', () => {
    const reference = run('NO_SHARD ×2').losses;
    // (Accumulating splits each rank's 4 sequences in two matrix products: another order again.)
    const same = [...runs].filter(([name]) => /×2/.test(name) && !/accumulating/.test(name));
    assert.equal(same.length, 8);
    for (const [name, r] of same) assert.deepEqual(r.losses, reference, name);
  });

  it('gathers early without changing a value: FULL_SHARD ×4 with forward prefetch, BACKWARD_POST or none is bitwise BACKWARD_PRE', () => {
    const reference = run('FULL_SHARD ×4').losses;
    for (const name of ['FULL_SHARD ×4 forward_prefetch', 'FULL_SHARD ×4 BACKWARD_POST', 'FULL_SHARD ×4 no prefetch'])
      assert.deepEqual(run(name).losses, reference, name);
  });

  it('logs from rank 0 once, with a step event per rank carrying its rank', () => {
    for (const [name, r] of runs) {
      const start = eventsOf(r.events, 'run_start');
      assert.equal(start.length, 1, name);
      assert.equal(eventsOf(r.events, 'run_end').length, 1, name);
      const ranks = start[0].world.size;
      assert.equal(
        new Set(start[0].world.ranks.map((k) => k.pid)).size,
        ranks,
        `${name}: every rank is its own process`,
      );
      const steps = eventsOf(r.events, 'step');
      assert.equal(steps.length, ranks === 1 ? 6 : 6 * (ranks + 1), name);
      if (ranks > 1)
        for (let k = 0; k < ranks; ++k) assert.equal(steps.filter((e) => e.rank === k).length, 6, `${name} rank ${k}`);
    }
  });

  it("measures every rank's peak, category by category, exactly as the memory plan says", () => {
    const wrong: string[] = [];
    for (const [name, r] of runs) {
      const planned = eventsOf(r.events, 'run_start')[0].memory_plan!; // the native runtime always plans
      for (const [rank, steps] of stepsByRank(r.events)) {
        for (const s of steps) {
          for (const c of CATEGORIES)
            if (s.mem_peak_by_category![c] !== planned[c])
              wrong.push(
                `${name} rank ${rank} step ${s.step} ${c}: ${s.mem_peak_by_category![c]} measured, ${planned[c]} planned`,
              );
          // The plan's total adds the categories' peaks within a phase: a bound when they do not coincide.
          if (s.mem_peak > planned.total)
            wrong.push(`${name} rank ${rank} step ${s.step}: total ${s.mem_peak} over the plan's ${planned.total}`);
          if (planned.host!.total > 0) {
            for (const c of ['params', 'grads', 'optimizer'] as const) {
              if (s.mem_peak_host_by_category![c] !== planned.host![c])
                wrong.push(
                  `${name} rank ${rank} host ${c}: ${s.mem_peak_host_by_category![c]} measured, ${planned.host![c]} planned`,
                );
            }
          }
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('holds 1/N of the model state per rank under FULL_SHARD (within 1%), plus the gather buffers MEMORY.md documents', () => {
    const modelState = (b: { params: number; grads: number; optimizer: number }) => b.params + b.grads + b.optimizer;
    const whole = modelState(residentByRank(run('1 rank').events)[0].device);
    for (const N of [2, 4]) {
      const r = run(`FULL_SHARD ×${N}`);
      for (const [rank, { device }] of residentByRank(r.events).entries()) {
        const held = modelState(device);
        assert.ok(
          Math.abs(held - whole / N) <= 0.01 * (whole / N),
          `rank ${rank} of ${N}: ${held} bytes of model state, ${whole / N} is 1/${N}`,
        );
        // Gathered for compute on top: at most the unit, the one prefetched (the previous one in
        // backward) and the tied embedding while the head runs — here two blocks, float32.
        const gathered = Math.max(
          2 * padded(1, N),
          padded(3, N) + padded(2, N) + padded(0, N),
          padded(1, N) + padded(0, N),
        );
        for (const s of stepsByRank(r.events).get(rank)!)
          assert.equal(
            s.mem_peak_by_category!.params - device.params,
            4 * gathered,
            `rank ${rank} of ${N}, step ${s.step}`,
          );
      }
    }
  });

  it('shards exactly what each strategy names: ZeRO-1 the optimizer state, ZeRO-2 the gradients too, HYBRID within a node, offload to host memory', () => {
    const full = 4 * UNIT_NUMELS.reduce((a, b) => a + b, 0);
    const shard = (D: number) => 4 * shardElements(D);
    const expect: Array<
      [
        string,
        { params: number; grads: number; optimizer: number },
        { params: number; grads: number; optimizer: number },
      ]
    > = [];
    for (const N of [2, 4]) {
      expect.push([
        `NO_SHARD ×${N}`,
        { params: full, grads: full, optimizer: 2 * full },
        { params: 0, grads: 0, optimizer: 0 },
      ]);
      expect.push([
        `SHARD_OPTIMIZER ×${N}`,
        { params: full, grads: full, optimizer: 2 * shard(N) },
        { params: 0, grads: 0, optimizer: 0 },
      ]);
      expect.push([
        `SHARD_GRAD_OP ×${N}`,
        { params: full, grads: shard(N), optimizer: 2 * shard(N) },
        { params: 0, grads: 0, optimizer: 0 },
      ]);
      expect.push([
        `FULL_SHARD ×${N}`,
        { params: shard(N), grads: shard(N), optimizer: 2 * shard(N) },
        { params: 0, grads: 0, optimizer: 0 },
      ]);
    }
    expect.push([
      'HYBRID_SHARD ×4',
      { params: shard(2), grads: shard(2), optimizer: 2 * shard(2) },
      { params: 0, grads: 0, optimizer: 0 },
    ]);
    expect.push([
      'FULL_SHARD ×2 cpu_offload',
      { params: 0, grads: 0, optimizer: 0 },
      { params: shard(2), grads: shard(2), optimizer: 2 * shard(2) },
    ]);
    expect.push([
      'SHARD_OPTIMIZER ×2 cpu_offload',
      { params: full, grads: full, optimizer: 0 },
      { params: 0, grads: 0, optimizer: 2 * shard(2) },
    ]);
    for (const [name, device, host] of expect) {
      for (const [rank, held] of residentByRank(run(name).events).entries()) {
        const pick = (b: { params: number; grads: number; optimizer: number }) => ({
          params: b.params,
          grads: b.grads,
          optimizer: b.optimizer,
        });
        assert.deepEqual(pick(held.device), device, `${name} rank ${rank}, device`);
        assert.deepEqual(pick(held.host), host, `${name} rank ${rank}, host`);
      }
    }
  });
});
