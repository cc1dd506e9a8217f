// Pipeline parallel as torchtitan and torch.distributed.pipelining run it: which layers each stage
// holds, and how many micro-batches' activations a rank keeps at its peak under each schedule.
// Sources: torchtitan/distributed/pipeline_parallel.py (generate_llm_fqn_per_model_part: the
// embedding and the output each count as pipeline_parallel_first/last_stage_less_layers layers),
// torch/distributed/pipelining/schedules.py (Schedule1F1B, ScheduleInterleaved1F1B warm-up steps).

export type PipelineSchedule =
  '1F1B' | 'Interleaved1F1B' | 'GPipe' | 'LoopedBFS' | 'InterleavedZeroBubble' | 'ZBVZeroBubble' | 'DualPipeV';
export const PIPELINE_SCHEDULES: readonly PipelineSchedule[] = [
  '1F1B',
  'Interleaved1F1B',
  'GPipe',
  'LoopedBFS',
  'InterleavedZeroBubble',
  'ZBVZeroBubble',
  'DualPipeV',
];

const SINGLE_STAGE = new Set<PipelineSchedule>(['1F1B', 'GPipe']);

/** Stages per rank: one for the single-stage schedules, two for the looped ones (torchtitan's default). */
export function stagesPerRankOf(schedule: PipelineSchedule, layersPerStage?: number, pp = 1, nLayers = 0): number {
  if (SINGLE_STAGE.has(schedule)) return 1;
  if (layersPerStage && pp > 0) return Math.max(2, Math.floor(Math.ceil((nLayers + 2) / layersPerStage) / pp));
  return 2;
}

/**
 * Transformer layers of each stage (pp × stagesPerRank of them, in order): the layers plus the
 * embedding's and output's weights spread evenly, the first stages taking the remainder.
 */
export function layersPerStage(nLayers: number, stages: number, inputWeight = 1, outputWeight = 1): number[] {
  if (stages === 1) return [nLayers];
  const effective = nLayers + inputWeight + outputWeight;
  const per = Math.floor(effective / stages);
  const extra = effective % stages;
  const out: number[] = [];
  let left = nLayers;
  for (let s = 0; s < stages; s++) {
    let n = per + (s < extra ? 1 : 0);
    if (s === 0) n -= inputWeight;
    if (s === stages - 1) n -= outputWeight;
    n = Math.max(0, Math.min(n, left));
    out.push(n);
    left -= n;
  }
  out[stages - 1] += left;
  return out;
}

/** The stages rank `rank` holds: rank, rank + pp, … (looped), or a V shape for ZBV / DualPipeV. */
export function stagesOfRank(rank: number, pp: number, perRank: number, schedule: PipelineSchedule): number[] {
  if (perRank === 1) return [rank];
  if (schedule === 'ZBVZeroBubble' || schedule === 'DualPipeV') return [rank, 2 * pp - 1 - rank];
  return Array.from({ length: perRank }, (_, k) => rank + k * pp);
}

/**
 * Micro-batches of one stage-chunk whose activations rank `rank` holds at its peak, counted in
 * chunk-forwards: 1F1B keeps pp − rank (its warm-up plus one), GPipe and LoopedBFS all of them,
 * Interleaved1F1B its warm-up ((v − 1)·pp + 2·(pp − 1 − rank)) plus one — Narayanan et al. 2021's
 * (1 + (p − 1)/(p·v)) × the 1F1B memory for rank 0. The zero-bubble schedules split weight
 * gradients off the backward and are counted like Interleaved1F1B (a bound: their weight
 * gradients run later, freeing the same activations).
 */
export function chunkForwardsInFlight(
  schedule: PipelineSchedule,
  rank: number,
  pp: number,
  microbatches: number,
  perRank: number,
): number {
  const m = microbatches;
  switch (schedule) {
    case '1F1B':
      return Math.min(m, pp - rank);
    case 'GPipe':
      return m;
    case 'LoopedBFS':
      return m * perRank;
    default: {
      const warmup = (perRank - 1) * pp + 2 * (pp - 1 - rank);
      return Math.min(m * perRank, warmup + 1);
    }
  }
}
