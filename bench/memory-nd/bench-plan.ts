// What the N-D memory benchmarks share: the parallel plan a bench row is estimated with, and how a
// measuring script's result is read (its last line of stdout, one JSON object).
import { execFileSync } from 'node:child_process';
import type { NdModel } from '../../core/memory/parallel/nd-model';
import type { ParallelPlan } from '../../core/memory/parallel/parallel-plan';
import { stagesPerRankOf, type PipelineSchedule } from '../../core/memory/parallel/pipeline';

/** Runs `python script ...args` and returns its last stdout line, parsed. */
export function lastJsonLine<T>(python: string, script: string, args: string[]): T {
  const out = execFileSync(python, [script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .trim()
    .split('\n')
    .pop()!;
  return JSON.parse(out) as T;
}

/** A bench row's plan: fp32 master weights; FSDP2 reshards after forward except under pipeline parallel, as torchtitan does. */
/** A bench row's degrees: what is not given is 1 (1F1B for the schedule; sequence parallel with TP). */
export interface BenchDegrees {
  replicate?: number;
  shard: number;
  tp: number;
  cp?: number;
  pp?: number;
  schedule?: PipelineSchedule;
  microbatches?: number;
  sp?: boolean;
}

export function plan(model: NdModel, d: BenchDegrees): ParallelPlan {
  const pp = d.pp ?? 1;
  const schedule = d.schedule ?? '1F1B';
  return {
    model,
    replicate: d.replicate ?? 1,
    shard: d.shard,
    tp: d.tp,
    cp: d.cp ?? 1,
    pp,
    ep: 1,
    etp: 1,
    sequenceParallel: d.sp ?? d.tp > 1,
    schedule,
    stagesPerRank: pp > 1 ? stagesPerRankOf(schedule) : 1,
    microbatches: d.microbatches ?? 1,
    reshardAfterForward: pp === 1,
    masterDtype: 'float32',
  };
}
