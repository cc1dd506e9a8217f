// Pipeline parallel: the schedule name as torch.distributed.pipelining reads it, and the number of
// micro-batches (local_batch_size / pipeline_parallel_microbatch_size) each schedule needs.
// Sources: torchtitan/distributed/pipeline_parallel.py (pipeline_llm, build_pipeline_schedule);
// torch/distributed/pipelining/schedules.py (get_schedule_class and each schedule's __init__).
import type { ConfigProblem } from '../../config/schema-problems';
import { closestMatch } from '../../config/did-you-mean';
import { asNumber, isObject, report, type ConfigRule } from '../rule';
import { PARALLELISM, readDegrees } from './degrees';

/** torch 2.13's get_schedule_class map; single-stage schedules run one stage per rank. */
export const PIPELINE_SCHEDULES = [
  '1F1B',
  'Interleaved1F1B',
  'GPipe',
  'LoopedBFS',
  'InterleavedZeroBubble',
  'PipelineScheduleSingle',
  'PipelineScheduleMulti',
  'ZBVZeroBubble',
  'DualPipeV',
] as const;
const SINGLE_STAGE = new Set(['1f1b', 'gpipe', 'pipelineschedulesingle']);

export function canonicalSchedule(name: string): string | undefined {
  return PIPELINE_SCHEDULES.find((s) => s.toLowerCase() === name.toLowerCase());
}

/** Stages each pipeline rank holds: 1 for single-stage schedules, 2 for the looped ones (torchtitan's default without layers_per_stage). */
export function stagesPerRank(schedule: string): number {
  return SINGLE_STAGE.has(schedule.toLowerCase()) ? 1 : 2;
}

export const pipelineSchedule: ConfigRule = {
  code: 'torchtitan.pipeline-schedule',
  why: 'torch.distributed.pipelining looks the schedule up by name (case-insensitive) and refuses unknown ones; each schedule needs enough micro-batches: local_batch_size must divide into pipeline_parallel_microbatch_size pieces, 1F1B needs at least as many micro-batches as stages, Interleaved1F1B a multiple of the rounds (micro-batches ÷ pipeline degree), DualPipeV at least as many as stages; fewer micro-batches than stages leaves the pipeline idle (torchtitan warns of the bubble).',
  source:
    'torchtitan/distributed/pipeline_parallel.py: pipeline_llm, build_pipeline_schedule; torch/distributed/pipelining/schedules.py: get_schedule_class, Schedule1F1B, ScheduleInterleaved1F1B, ScheduleDualPipeV',
  check(ctx) {
    const p = ctx.value[PARALLELISM];
    if (!isObject(p)) return [];
    const problems: ConfigProblem[] = [];
    const written = typeof p.pipeline_parallel_schedule === 'string' ? p.pipeline_parallel_schedule : '1F1B';
    const schedule = canonicalSchedule(written);
    const csv = typeof p.pipeline_parallel_schedule_csv === 'string' && p.pipeline_parallel_schedule_csv !== '';
    if (!schedule && !csv) {
      const suggestion = closestMatch(written, PIPELINE_SCHEDULES);
      problems.push(
        report(ctx, this, {
          path: [PARALLELISM, 'pipeline_parallel_schedule'],
          severity: 'error',
          message: `unknown pipeline schedule "${written}"; torch knows ${PIPELINE_SCHEDULES.join(', ')}${suggestion ? `; did you mean "${suggestion}"?` : ''}`,
          fixes: suggestion
            ? [
                {
                  title: `Change to ${suggestion}`,
                  preferred: true,
                  edits: [{ kind: 'set', path: [PARALLELISM, 'pipeline_parallel_schedule'], value: suggestion }],
                },
              ]
            : undefined,
        }),
      );
      return problems;
    }
    const d = readDegrees(ctx);
    if (!d || d.pp === 1 || !schedule) return problems;
    const t = isObject(ctx.value.training) ? ctx.value.training : {};
    const local = asNumber(t.local_batch_size) ?? 8;
    const mbs = asNumber(p.pipeline_parallel_microbatch_size) ?? 1;
    if (local < 1 || mbs < 1) return problems;
    const mbsPath = [PARALLELISM, 'pipeline_parallel_microbatch_size'];
    if (local % mbs !== 0) {
      const divisor = largestDivisorAtMost(local, mbs);
      problems.push(
        report(ctx, this, {
          path: mbsPath,
          severity: 'error',
          message: `local_batch_size ${local} is not divisible by pipeline_parallel_microbatch_size ${mbs}; torchtitan stops before training`,
          fixes: [
            {
              title: `Set pipeline_parallel_microbatch_size = ${divisor}`,
              preferred: true,
              edits: [{ kind: 'set', path: mbsPath, value: divisor }],
            },
          ],
        }),
      );
      return problems;
    }
    const n = local / mbs;
    const stages = d.pp * stagesPerRank(schedule);
    const at = isObject(p) && 'pipeline_parallel_microbatch_size' in p ? mbsPath : ['training', 'local_batch_size'];
    const fewer = `${n} micro-batch${n > 1 ? 'es' : ''} (local_batch_size ${local} / pipeline_parallel_microbatch_size ${mbs})`;
    if ((schedule === '1F1B' && n < d.pp) || (schedule === 'DualPipeV' && n < stages)) {
      problems.push(
        report(ctx, this, {
          path: at,
          severity: 'error',
          message: `${schedule} needs at least as many micro-batches as stages (${schedule === '1F1B' ? d.pp : stages}); this gives ${fewer}`,
        }),
      );
    } else if (schedule === 'Interleaved1F1B' || schedule === 'InterleavedZeroBubble') {
      const rounds = Math.max(1, Math.floor(n / d.pp));
      if (n % rounds !== 0)
        problems.push(
          report(ctx, this, {
            path: at,
            severity: 'error',
            message: `${schedule} needs the micro-batches to be a multiple of the rounds (${rounds} = ${n} / pipeline degree ${d.pp}); this gives ${fewer}`,
          }),
        );
      else if (n < stages)
        problems.push(
          report(ctx, this, {
            path: at,
            severity: 'warning',
            message: `${fewer} for ${stages} stages (${d.pp} ranks × ${stagesPerRank(schedule)}): fewer micro-batches than stages leaves pipeline ranks idle`,
          }),
        );
    } else if (n < stages) {
      problems.push(
        report(ctx, this, {
          path: at,
          severity: 'warning',
          message: `${fewer} for ${stages} stage${stages > 1 ? 's' : ''}: fewer micro-batches than stages leaves pipeline ranks idle`,
        }),
      );
    }
    return problems;
  },
};

function largestDivisorAtMost(n: number, limit: number): number {
  for (let k = Math.min(n, limit); k >= 1; k--) if (n % k === 0) return k;
  return 1;
}
