// Multi-process runs for the sharding tests: one small config whose global batch is the same
// (8 sequences per step) whether 1, 2 or 4 ranks split it, run through `fsdp-train --nproc N`
// (mpirun --oversubscribe underneath: 4 ranks share this machine's 2 cores), and readers of
// what such a run leaves: the run's losses, every rank's step events, every rank's resident memory.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { MemoryByCategory, MetricsEvent, MetricsEventOf } from '../../core/protocol/metrics';
import { eventsOf, lossHistory, readEvents, smallConfig, train, writeConfig } from './train-runs';

export const GLOBAL_BATCH = 8;
export const STRATEGIES = ['NO_SHARD', 'SHARD_OPTIMIZER', 'SHARD_GRAD_OP', 'FULL_SHARD', 'HYBRID_SHARD'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export interface ShardedRun {
  ranks: number;
  strategy?: Strategy;
  /** Config sections merged over the base (fsdp, training, model, checkpointing …). */
  extra?: Record<string, Record<string, unknown>>;
  /** More fsdp-train arguments (--resume, --ranks-per-node …). */
  args?: string[];
}

/** The base config: dropout on (masks must not depend on the split), one thread per rank. */
export function shardedConfig(run: ShardedRun): Record<string, unknown> {
  const accumulation = Number(run.extra?.training?.gradient_accumulation_steps ?? 1);
  const extra = run.extra ?? {};
  const config = smallConfig({
    ...extra,
    model: { dropout: 0.1, ...extra.model },
    training: { max_steps: 6, batch_size_per_gpu: GLOBAL_BATCH / run.ranks / accumulation, ...extra.training },
    fsdp: { sharding_strategy: run.strategy ?? 'NO_SHARD', ...extra.fsdp },
    launch: { threads_per_rank: 1, ...extra.launch },
  });
  // fsdp.zero_stage names the strategy by itself (the config takes one or the other).
  if (extra.fsdp?.zero_stage !== undefined && !run.strategy)
    delete (config.fsdp as Record<string, unknown>).sharding_strategy;
  return config;
}

/** Runs `fsdp-train --nproc N` on the config in dir/<name>.json into dir/<name>/; fails the test unless it completes. */
export async function runSharded(dir: string, name: string, run: ShardedRun): Promise<string> {
  const runDir = path.join(dir, name);
  const config = writeConfig(dir, shardedConfig(run), `${name}.json`);
  // --oversubscribe: up to 4 ranks are emulated on a 2-core machine on purpose.
  const r = await train([
    config,
    '--nproc',
    String(run.ranks),
    '--oversubscribe',
    '--run-dir',
    runDir,
    ...(run.args ?? []),
  ]);
  assert.equal(r.code, 0, `${name}: exit ${r.code}\n${r.stderr}`);
  return runDir;
}

export interface RunOutcome {
  events: MetricsEvent[];
  /** The run's loss per step (whole-run step events, restarts applied). */
  losses: Map<number, number | null>;
}

export async function outcomeOf(runDir: string): Promise<RunOutcome> {
  const { events, problems } = await readEvents(runDir);
  assert.deepEqual(problems, [], `${runDir}: lines the protocol reader rejected`);
  return { events, losses: lossHistory(events.filter((e) => e.type !== 'step' || e.rank === undefined)) };
}

/** Per-rank step events (multi-rank runs), or the run's own for one rank, keyed by rank. */
export function stepsByRank(events: MetricsEvent[]): Map<number, MetricsEventOf<'step'>[]> {
  const steps = eventsOf(events, 'step');
  const ranked = steps.filter((e) => e.rank !== undefined);
  const out = new Map<number, MetricsEventOf<'step'>[]>();
  for (const e of ranked.length ? ranked : steps) out.set(e.rank ?? 0, [...(out.get(e.rank ?? 0) ?? []), e]);
  return out;
}

/** What each rank held when training started (model state, optimizer state, data ring), by the runtime's allocator. */
export function residentByRank(events: MetricsEvent[]): Array<{ device: MemoryByCategory; host: MemoryByCategory }> {
  return eventsOf(events, 'run_start')[0].world.ranks.map((r) => {
    assert.ok(r.mem_resident && r.mem_resident_host, `rank ${r.rank} reports no resident memory`);
    return { device: r.mem_resident, host: r.mem_resident_host };
  });
}

/** Largest relative difference between two loss sequences over the steps of `reference`. */
export function maxRelativeDifference(
  reference: Map<number, number | null>,
  other: Map<number, number | null>,
): number {
  assert.deepEqual([...other.keys()], [...reference.keys()], 'the runs logged different steps');
  let worst = 0;
  for (const [step, want] of reference) {
    const got = other.get(step);
    assert.ok(typeof want === 'number' && typeof got === 'number', `step ${step}: a loss is not finite`);
    worst = Math.max(worst, Math.abs(got - want) / Math.abs(want));
  }
  return worst;
}
