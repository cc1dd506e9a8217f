// `npm run bench:sharding`: what each sharding strategy costs and saves, per rank, at 1, 2 and 4
// ranks (`fsdp-train --nproc N`, mpirun underneath).
//  1. Per-rank peak memory by category (params, grads, optimizer, activations, workspace, comm,
//     other; and host memory under cpu_offload), from each rank's own step events: the runtime
//     allocator's measured peaks.
//  2. Step time of each strategy against NO_SHARD at the same number of ranks (median of the steps
//     after the first WARMUP; each configuration run ROUNDS times, interleaved, the lower median kept
//     so that a burst of load from the other users of the machine counts less).
// Writes bench/results/sharding-<date>.json and .md with the machine, the load and this command.
//
// One thread per rank: 1 rank uses one core, 2 ranks both, and 4 ranks oversubscribe this
// machine's 2 cores twice over (mpirun --oversubscribe), so at 4 ranks every collective also waits
// for a rank the scheduler has not run yet: the 4-rank overheads are an upper bound.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setup, root } from '../setup/index.mjs';
import { load, median, provenance, scratchFolder, train as trainIn, writeResults } from './native-bench.mjs';

await setup('start', { codeServer: false });
const data = path.join(root, 'samples', 'data');
const work = scratchFolder('sharding');
/** Runs fsdp-train --nproc N; resolves to the events of its metrics.jsonl. */
// --oversubscribe: the benchmark emulates up to 4 ranks on a 2-core machine on purpose.
const train = async (configFile, ranks, extraArgs) =>
  (await trainIn(work, configFile, ['--nproc', String(ranks), '--oversubscribe', ...extraArgs])).events;

const GLOBAL_BATCH = 8;
const STEPS = 12;
const WARMUP = 3;
const ROUNDS = 3;
const RANKS = [1, 2, 4];
const CATEGORIES = ['params', 'grads', 'optimizer', 'activations', 'workspace', 'comm', 'other'];
/** [label, fsdp section, extra fsdp-train arguments at N ranks] */
const STRATEGIES = [
  ['NO_SHARD', { sharding_strategy: 'NO_SHARD' }, () => []],
  ['SHARD_OPTIMIZER', { sharding_strategy: 'SHARD_OPTIMIZER' }, () => []],
  ['SHARD_GRAD_OP', { sharding_strategy: 'SHARD_GRAD_OP' }, () => []],
  ['FULL_SHARD', { sharding_strategy: 'FULL_SHARD' }, () => []],
  // Two emulated nodes of 2 at 4 ranks (shard within, replicate across); one node below that.
  ['HYBRID_SHARD', { sharding_strategy: 'HYBRID_SHARD' }, (n) => (n === 4 ? ['--ranks-per-node', '2'] : [])],
  ['FULL_SHARD + cpu_offload', { sharding_strategy: 'FULL_SHARD', cpu_offload: true }, () => []],
];

/**
 * A model whose parameters weigh more against its compute than samples/tiny-cpu.yaml's (d 256 for
 * 128, T 64 for 128), so that what a strategy communicates shows in the step time; the same global
 * batch at every N.
 */
function writeConfig(name, ranks, fsdp) {
  const file = path.join(work, `${name}.json`);
  const config = {
    name,
    model: { d_model: 256, n_layers: 4, n_heads: 4, vocab_size: 256, max_seq_len: 64 },
    data: { train: path.join(data, 'fortunes-byte-train.tok'), seq_len: 64 },
    training: {
      batch_size_per_gpu: GLOBAL_BATCH / ranks,
      max_steps: STEPS,
      learning_rate: 0.003,
      warmup_steps: 2,
      seed: 1234,
    },
    fsdp,
    checkpointing: { save_final: false, save_every_n_steps: 0 },
    launch: { threads_per_rank: 1 },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** Per rank: peak bytes by category over the run's steps (device and host), and the resident model state. */
function memoryByRank(events) {
  const steps = events.filter((e) => e.type === 'step');
  const ranked = steps.filter((e) => e.rank !== undefined);
  const start = events.find((e) => e.type === 'run_start');
  const byRank = new Map();
  for (const e of ranked.length ? ranked : steps) byRank.set(e.rank ?? 0, [...(byRank.get(e.rank ?? 0) ?? []), e]);
  return [...byRank]
    .sort(([a], [b]) => a - b)
    .map(([rank, rs]) => {
      const peak = (field) =>
        Object.fromEntries(CATEGORIES.map((c) => [c, Math.max(...rs.map((s) => s[field]?.[c] ?? 0))]));
      const resident = start.world.ranks.find((r) => r.rank === rank) ?? start.world.ranks[0];
      return {
        rank,
        peak: Math.max(...rs.map((s) => s.mem_peak)),
        peak_by_category: peak('mem_peak_by_category'),
        peak_host_by_category: peak('mem_peak_host_by_category'),
        resident_model_state: ['params', 'grads', 'optimizer'].reduce(
          (sum, c) => sum + resident.mem_resident[c] + resident.mem_resident_host[c],
          0,
        ),
      };
    });
}

/** The job's step time: the slowest rank's (every step ends in a collective), median after warm-up. */
function stepTimes(events) {
  const steps = events.filter((e) => e.type === 'step');
  const ranked = steps.filter((e) => e.rank !== undefined);
  const byStep = new Map();
  for (const e of ranked.length ? ranked : steps)
    if (e.step > WARMUP) byStep.set(e.step, Math.max(byStep.get(e.step) ?? 0, e.step_ms));
  const cpu = (ranked.length ? ranked : steps).filter((e) => e.step > WARMUP);
  return {
    step_ms_median: median([...byStep.values()]),
    cpu_ms_per_step: cpu.reduce((s, e) => s + e.cpu_ms, 0) / byStep.size,
  };
}

const loadAtStart = load();
const results = new Map();
for (let round = 0; round < ROUNDS; ++round) {
  for (const ranks of RANKS) {
    for (const [label, fsdp, args] of STRATEGIES) {
      console.error(`bench:sharding: round ${round + 1}/${ROUNDS}, ${label} x${ranks}…`);
      const name = `${label.replace(/\W+/g, '-')}-x${ranks}`;
      const events = await train(writeConfig(name, ranks, fsdp), ranks, args(ranks));
      const times = stepTimes(events);
      const prev = results.get(name);
      if (!prev)
        results.set(name, {
          strategy: label,
          ranks,
          args: args(ranks),
          memory: memoryByRank(events),
          step_ms_medians: [times.step_ms_median],
          cpu_ms_per_step: [times.cpu_ms_per_step],
        });
      else {
        prev.step_ms_medians.push(times.step_ms_median);
        prev.cpu_ms_per_step.push(times.cpu_ms_per_step);
      }
    }
  }
}
rmSync(work, { recursive: true, force: true });

const runs = [...results.values()].map((r) => ({
  ...r,
  step_ms: Math.min(...r.step_ms_medians),
  cpu_ms: Math.min(...r.cpu_ms_per_step),
}));
for (const r of runs) {
  const base = runs.find((b) => b.strategy === 'NO_SHARD' && b.ranks === r.ranks);
  r.overhead_vs_no_shard = r.step_ms / base.step_ms - 1;
  r.cpu_overhead_vs_no_shard = r.cpu_ms / base.cpu_ms - 1;
}
const result = {
  date: new Date().toISOString(),
  command: 'npm run bench:sharding',
  ...provenance({ mpi: execFileSync('mpirun', ['--version'], { encoding: 'utf8' }).split('\n')[0] }),
  load_average_1min: { start: loadAtStart, end: load() },
  setup: {
    model: 'd_model 256, 4 layers, 4 heads, byte vocabulary (256), T 64, float32',
    global_batch: GLOBAL_BATCH,
    steps: STEPS,
    warmup_steps_excluded: WARMUP,
    rounds: ROUNDS,
    threads_per_rank: 1,
  },
  runs,
};

const day = result.date.slice(0, 10);
const kib = (b) => (b / 1024).toFixed(0);
const pct = (x) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(0)}%`;
/** One row per rank, or one row "all" when every rank measured the same. */
const memoryRows = runs.flatMap((r) => {
  const same = r.memory.every((m) => JSON.stringify({ ...m, rank: 0 }) === JSON.stringify({ ...r.memory[0], rank: 0 }));
  return (same ? [{ ...r.memory[0], rank: r.ranks === 1 ? '0' : 'all' }] : r.memory).map(
    (m) =>
      `| ${r.strategy} | ${r.ranks} | ${m.rank} | ${CATEGORIES.map((c) => kib(m.peak_by_category[c])).join(' | ')} | ${kib(['params', 'grads', 'optimizer'].reduce((s, c) => s + m.peak_host_by_category[c], 0))} | ${kib(m.peak)} | ${kib(m.resident_model_state)} |`,
  );
});
const md = `# Sharding strategies: per-rank memory and step time, ${day}

Command: \`${result.command}\` (commit ${result.commit}). Machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${result.machine.memory_gib} GiB, ${result.machine.mpi}.
1-minute load average: ${result.load_average_1min.start.toFixed(2)} at the start, ${result.load_average_1min.end.toFixed(2)} at the end (the machine is shared with other engineers).
Model: ${result.setup.model}; global batch ${GLOBAL_BATCH} sequences at every rank count (${GLOBAL_BATCH}/N per rank), ${STEPS} steps, one thread per rank.
**4 ranks oversubscribe the 2 cores twice over** (mpirun --oversubscribe): each collective there also waits for ranks not scheduled, so the 4-rank step times and overheads are upper bounds.
HYBRID_SHARD at 4 ranks: two emulated nodes of 2 (\`--ranks-per-node 2\`); at 2 ranks one node, where it is FULL_SHARD.

## Per-rank peak memory by category (KiB, the runtime allocator's measured peaks)

"rank all": every rank measured the same. host: the model state kept in host memory (cpu_offload). resident model state: params + grads + optimizer held between steps (device and host).

| strategy | ranks | rank | params | grads | optimizer | activations | workspace | comm | other | host | total peak | resident model state |
|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${memoryRows.join('\n')}

## Step time against NO_SHARD at the same number of ranks

Median step time in ms (the slowest rank's, steps ${WARMUP + 1}-${STEPS}): the lowest of ${ROUNDS} interleaved runs, the highest in brackets — their gap is the noise of this shared machine. CPU ms: CPU time of all ranks per step (Open MPI polls while it waits, so waiting shows as CPU time too).

| strategy | ${RANKS.map((n) => `${n} rank${n > 1 ? 's' : ''}: step ms | vs NO_SHARD | CPU ms | vs NO_SHARD`).join(' | ')} |
|---|${RANKS.map(() => '---:|---:|---:|---:').join('|')}|
${STRATEGIES.map(
  ([label]) =>
    `| ${label} | ${RANKS.map((n) => {
      const r = runs.find((x) => x.strategy === label && x.ranks === n);
      return `${r.step_ms.toFixed(1)} (${Math.max(...r.step_ms_medians).toFixed(0)}) | ${pct(r.overhead_vs_no_shard)} | ${r.cpu_ms.toFixed(1)} | ${pct(r.cpu_overhead_vs_no_shard)}`;
    }).join(' | ')} |`,
).join('\n')}

At 1 rank every strategy has nothing to shard or communicate (a shard is the whole unit, the plan's effective strategy is NO_SHARD): the 1-rank column does the same work in every row, so its spread is the noise floor of these figures.
`;
writeResults('sharding', result, md);
console.log(md);
