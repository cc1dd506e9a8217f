// `npm run bench:memory-nd -- --pp-only`: pipeline parallel (with FSDP2 inside each stage) measured by
// PyTorch's own MemTracker in real processes on the CPU (bench/memory-nd/measure_pp.py: gloo,
// torch.distributed.pipelining's schedules, two AdamW steps), against the N-D estimate for the same
// model, degrees, schedule, micro-batches, sequence and dtype, per pipeline rank. A few minutes.
// Writes bench/results/memory-nd-pp-<date>.md and .json.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { shapeOfNdModel } from '../../core/memory/inputs/from-torchtitan';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import type { NdModel } from '../../core/memory/parallel/nd-model';
import type { PipelineSchedule } from '../../core/memory/parallel/pipeline';
import { benchContext } from '../run-context';
import { lastJsonLine, plan } from './bench-plan';

const MB = 1e6;
const MICRO_BATCH = 2;
const SEQ = 256;

interface PipelineRun {
  pp: number;
  dp: number;
  schedule: PipelineSchedule;
  microbatches: number;
}
const RUNS: PipelineRun[] = [
  { pp: 2, dp: 1, schedule: '1F1B', microbatches: 4 },
  { pp: 2, dp: 2, schedule: '1F1B', microbatches: 4 },
  { pp: 2, dp: 2, schedule: 'GPipe', microbatches: 4 },
  { pp: 2, dp: 2, schedule: 'Interleaved1F1B', microbatches: 4 },
  { pp: 4, dp: 1, schedule: '1F1B', microbatches: 4 },
];

interface MeasuredRank {
  pp_rank: number;
  dp_rank: number;
  stages: number[];
  layers: number[][];
  peak: Record<string, number>;
}

export interface PipelineRow {
  world: number;
  pp: number;
  dp: number;
  schedule: PipelineSchedule;
  microbatches: number;
  rank: number;
  stages: number[];
  layers: number;
  measured: number;
  estimated: number;
  error: number;
  measuredByKind: Record<string, number>;
  estimatedByTerm: Record<string, number>;
}

/** The estimate for pipeline rank `rank` of a run: the dense rows' entry point with a pipeline plan. */
function estimateRank(model: NdModel, r: PipelineRun, rank: number) {
  const input: MemoryInput = {
    ...defaultMemoryInput(shapeOfNdModel(model), SEQ),
    framework: 'torchtitan',
    device: 'cpu',
    microBatch: MICRO_BATCH,
    nprocPerNode: r.pp * r.dp,
    precision: { param: 'float32', reduce: 'float32', activation: 'float32' },
    // torchtitan's apply_fsdp under pipeline parallel (reshard_after_forward off), as measure_pp.py wraps the stages.
    parallel: {
      ...plan(model, { shard: r.dp, tp: 1, pp: r.pp, schedule: r.schedule, microbatches: r.microbatches }),
      stage: rank,
    },
  };
  return estimateMemory(input);
}

export function comparePipeline(root: string, python: string, model: NdModel): PipelineRow[] {
  const rows: PipelineRow[] = [];
  for (const r of RUNS) {
    const script = path.join(__dirname, 'measure_pp.py');
    const args = [
      '--pp',
      String(r.pp),
      '--dp',
      String(r.dp),
      '--schedule',
      r.schedule,
      '--microbatches',
      String(r.microbatches),
      '--micro-batch',
      String(MICRO_BATCH),
      '--seq',
      String(SEQ),
    ];
    const m = lastJsonLine<{ ranks: MeasuredRank[] }>(python, script, args);
    for (let rank = 0; rank < r.pp; rank++) {
      // The data-parallel ranks of a pipeline rank hold the same shapes: the largest of them.
      const mine = m.ranks.filter((x) => x.pp_rank === rank);
      const worst = mine.reduce((a, b) => (b.peak.Total > a.peak.Total ? b : a));
      const e = estimateRank(model, r, rank);
      const measuredByKind = Object.fromEntries(
        Object.entries(worst.peak)
          .filter(([k, v]) => k !== 'Total' && v >= 0.05 * MB)
          .map(([k, v]) => [k.replace(/^_MemRefType\./, ''), v]),
      );
      // The allocator peak has no fragmentation margin: its term is left out here too.
      const estimatedByTerm = Object.fromEntries(
        e.terms
          .filter((t) => t.bytes[e.peakPhase] >= 0.05 * MB && t.id !== 'other.fragmentation')
          .map((t) => [t.id, t.bytes[e.peakPhase]]),
      );
      rows.push({
        world: r.pp * r.dp,
        pp: r.pp,
        dp: r.dp,
        schedule: r.schedule,
        microbatches: r.microbatches,
        rank,
        stages: worst.stages,
        layers: worst.layers.flat().length,
        measured: worst.peak.Total,
        estimated: e.allocatorPeak,
        error: e.allocatorPeak / worst.peak.Total - 1,
        measuredByKind,
        estimatedByTerm,
      });
      console.log(
        `pp ${r.pp} × dp ${r.dp} ${r.schedule} ×${r.microbatches}, pipeline rank ${rank}: measured ${(worst.peak.Total / MB).toFixed(1)} MB, estimated ${(e.allocatorPeak / MB).toFixed(1)} MB (${((e.allocatorPeak / worst.peak.Total - 1) * 100).toFixed(1)} %)`,
      );
    }
  }
  writeResults(root, model, rows);
  return rows;
}

function writeResults(root: string, model: NdModel, rows: PipelineRow[]): void {
  const { commit, date, machine } = benchContext(root);
  const command = 'npm run bench:memory-nd -- --pp-only';
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
  const mb = (x: number) => (x / MB).toFixed(1);
  const parts = (o: Record<string, number>) =>
    Object.entries(o)
      .map(([k, v]) => `${k} ${mb(v)}`)
      .join(', ');
  const md = [
    `# Pipeline parallel memory: the N-D estimate vs PyTorch's MemTracker in real processes (${date})`,
    '',
    `Command: \`${command}\` · commit ${commit} · machine: ${machine.cpu}, ${machine.cores} cores, load ${machine.loadAverage1m} · Node ${machine.node}.`,
    '',
    `Each run is pp × dp real processes on the CPU (gloo), \`bench/memory-nd/measure_pp.py\`: ${model.name} (16 heads, 8 key/value, SwiGLU ${model.ffnHidden}, vocabulary ${model.vocabSize}), fp32, ${MICRO_BATCH} × ${SEQ} tokens a micro-batch, no checkpointing, split into stages as torchtitan splits it (the embedding and the output weigh one layer each), FSDP2 over the dp ranks inside each stage with reshard_after_forward off (torchtitan's default under pipeline parallel), torch.distributed.pipelining's schedule with return_outputs off (as torchtitan's train step), two AdamW steps. Every rank tracks itself with \`torch.distributed._tools.mem_tracker.MemTracker\` (a subclass that lets a stage's root module run once per micro-batch); "measured" is its peak total on the pipeline rank (the largest over its dp ranks), "estimated" the estimate's allocator peak for that pipeline rank (\`plan.stage\`; no fragmentation margin, no CUDA context on the CPU).`,
    '',
    '| world | pp | dp | schedule | micro-batches | pipeline rank (stages, layers) | measured MB | estimated MB | error |',
    '|---:|---:|---:|---|---:|---|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.world} | ${r.pp} | ${r.dp} | ${r.schedule} | ${r.microbatches} | ${r.rank} (${r.stages.join(', ')}; ${r.layers}) | ${mb(r.measured)} | ${mb(r.estimated)} | ${pct(r.error)} |`,
    ),
    '',
    "Not in the rows: with `return_outputs` on (torch.distributed.pipelining's default; torchtitan's train step turns it off) the last stage keeps every micro-batch's output until the step returns: `.venv/bin/python bench/memory-nd/measure_pp.py --pp 2 --dp 2 --schedule 1F1B --microbatches 4 --return-outputs` measured 227.7 MB on pipeline rank 1 against 202.5 MB without (three more micro-batches' logits), which the estimate does not count.",
    '',
    rows.length
      ? `Largest absolute error ${(Math.max(...rows.map((r) => Math.abs(r.error))) * 100).toFixed(1)} %.`
      : 'No rows.',
    '',
    '## At the peak, by kind (MB)',
    '',
    "MemTracker counts FSDP's gathered parameters as PARAM and its accumulated unsharded gradients as GRAD, the pipeline's receive buffers as ACT, and whatever backward creates that is not a gradient of a parameter as TEMP. The estimate has no backward temporaries but the loss's fp32 gradient of the logits (activations.loss-grad); the last stage's loss backward holds two of that size (of log_softmax's output and of the logits), most of the last pipeline rank's shortfall.",
    '',
    '| run, pipeline rank | measured (MemTracker) | estimated (terms at its peak phase) |',
    '|---|---|---|',
    ...rows.map(
      (r) =>
        `| pp ${r.pp} × dp ${r.dp} ${r.schedule}, rank ${r.rank} | ${parts(r.measuredByKind)} | ${parts(r.estimatedByTerm)} |`,
    ),
    '',
  ];
  const base = path.join(root, 'bench', 'results', `memory-nd-pp-${date}`);
  writeFileSync(`${base}.md`, md.join('\n'));
  writeFileSync(
    `${base}.json`,
    JSON.stringify({ date, command, commit, machine, model: model.name, rows }, null, 2) + '\n',
  );
  console.log(`wrote ${path.relative(root, base)}.md and .json`);
}
