// `npm run bench:memory-nd`: the N-D parallel estimate (core/memory/parallel/) against
// 1. PyTorch's own memory tools on the CPU (bench/memory-nd/measure.py: one rank of a fake-process-group
//    world, real tensors, FSDP2's FSDPMemTracker or MemTracker) for FSDP2, tensor parallel with and
//    without sequence parallel, and FSDP × TP, at world sizes 2–64;
// 2. the figures torchtitan published for Llama 3.1 8B / 70B / 405B on H100s
//    (benchmarks/llama3_h100_202412_torchtitan.md at torchtitan v0.2.2).
// Writes bench/results/memory-nd-<date>.md and .json with the machine, load, command and commit.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { shapeOfNdModel } from '../../core/memory/inputs/from-torchtitan';
import { defaultMemoryInput, type CheckpointPolicy, type MemoryInput } from '../../core/memory/memory-input';
import type { NdModel } from '../../core/memory/parallel/nd-model';
import type { ParallelPlan } from '../../core/memory/parallel/parallel-plan';
import { stagesPerRankOf, type PipelineSchedule } from '../../core/memory/parallel/pipeline';
import { TORCHTITAN_FLAVOURS } from '../../core/memory/parallel/torchtitan-flavours';

const root = path.resolve(__dirname, '../..');
const python = path.join(root, '.venv', 'bin', 'python');
// `-- --published-only`: part 2 alone (seconds, not the ~35 min of part 1's tracked runs), written
// beside the full results as memory-nd-<date>-published.{md,json}.
const publishedOnly = process.argv.includes('--published-only');
const MB = 1e6;
const GiB = 2 ** 30;

// ---- 1. PyTorch's memory tools on the CPU ------------------------------------------------------
const BENCH_MODEL: NdModel = {
  name: 'bench Llama (512 wide, 4 layers)',
  vocabSize: 4096,
  dModel: 512,
  nLayers: 4,
  nHeads: 16,
  nKvHeads: 8,
  headDim: 32,
  ffnHidden: 1536,
  mlp: 'swiglu',
  tieEmbeddings: false,
};
const RUNS: Array<{ world: number; tp: number; sp: boolean; tracker: 'fsdp' | 'mem' }> = [
  { world: 2, tp: 1, sp: false, tracker: 'fsdp' },
  { world: 8, tp: 1, sp: false, tracker: 'fsdp' },
  { world: 64, tp: 1, sp: false, tracker: 'fsdp' },
  { world: 8, tp: 1, sp: false, tracker: 'mem' },
  { world: 2, tp: 2, sp: false, tracker: 'mem' },
  { world: 4, tp: 4, sp: false, tracker: 'mem' },
  { world: 2, tp: 2, sp: true, tracker: 'mem' },
  { world: 8, tp: 8, sp: true, tracker: 'mem' },
  { world: 8, tp: 2, sp: true, tracker: 'mem' },
  { world: 64, tp: 8, sp: true, tracker: 'mem' },
  { world: 64, tp: 4, sp: true, tracker: 'mem' },
];

function plan(
  model: NdModel,
  d: {
    replicate?: number;
    shard: number;
    tp: number;
    cp?: number;
    pp?: number;
    schedule?: PipelineSchedule;
    microbatches?: number;
    sp?: boolean;
  },
): ParallelPlan {
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

function cpuInput(r: (typeof RUNS)[number]): MemoryInput {
  return {
    ...defaultMemoryInput(shapeOfNdModel(BENCH_MODEL), 256),
    framework: 'torchtitan',
    device: 'cpu',
    microBatch: 2,
    nprocPerNode: r.world,
    precision: { param: 'float32', reduce: 'float32', activation: 'float32' },
    parallel: plan(BENCH_MODEL, { shard: r.world / r.tp, tp: r.tp, sp: r.sp }),
  };
}

interface CpuRow {
  run: string;
  measuredTotal: number;
  estimated: number;
  error: number;
  measuredStatic: number;
  estimatedStatic: number;
  measuredDynamic: number;
  estimatedDynamic: number;
}

const cpuRows: CpuRow[] = [];
if (publishedOnly) {
  console.log('--published-only: part 1 (the CPU trackers) not run');
} else if (!existsSync(python)) {
  console.error(`no ${python}: the CPU comparison needs the project's Python environment (npm test's set-up makes it)`);
} else {
  for (const r of RUNS) {
    const args = [
      path.join(__dirname, 'measure.py'),
      '--world',
      String(r.world),
      '--tp',
      String(r.tp),
      '--tracker',
      r.tracker,
      '--heads',
      '16',
      '--kv-heads',
      '8',
      ...(r.sp ? ['--sp'] : []),
    ];
    const out = execFileSync(python, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim()
      .split('\n')
      .pop()!;
    const m = JSON.parse(out) as { peak: Record<string, number> };
    const get = (suffix: string) =>
      Object.entries(m.peak)
        .filter(([k]) => k.endsWith(suffix))
        .reduce((s, [, v]) => s + v, 0);
    const measuredTotal = m.peak.Total;
    const measuredStatic =
      r.tracker === 'fsdp'
        ? get('SHARDED_PARAM') + get('.OPT') + get('BUFFER')
        : get('.PARAM') + get('.OPT') + get('BUFFER');
    const e = estimateMemory(cpuInput(r));
    const staticIds = new Set(['params.master', 'optimizer.adamw']);
    const peakPhase = e.peakPhase;
    const estimatedStatic =
      e.terms.filter((t) => staticIds.has(t.id)).reduce((s, t) => s + t.bytes[peakPhase], 0) +
      (r.tracker === 'mem' ? (e.terms.find((t) => t.id === 'comm.gathered')?.bytes[peakPhase] ?? 0) / 2 : 0);
    const run = `${r.tp > 1 ? `TP ${r.tp}${r.sp ? '+SP' : ' (no SP)'}` : 'FSDP2'}${r.world / r.tp > 1 && r.tp > 1 ? ` × FSDP ${r.world / r.tp}` : r.tp === 1 ? ` over ${r.world}` : ''} (${r.tracker === 'fsdp' ? 'FSDPMemTracker' : 'MemTracker'})`;
    cpuRows.push({
      run,
      measuredTotal,
      estimated: e.allocatorPeak,
      error: e.allocatorPeak / measuredTotal - 1,
      measuredStatic,
      estimatedStatic,
      measuredDynamic: measuredTotal - measuredStatic,
      estimatedDynamic: e.allocatorPeak - estimatedStatic,
    });
    console.log(
      `${run}: measured ${(measuredTotal / MB).toFixed(1)} MB, estimated ${(e.allocatorPeak / MB).toFixed(1)} MB (${((e.allocatorPeak / measuredTotal - 1) * 100).toFixed(1)} %)`,
    );
  }
}

// ---- 2. torchtitan's published H100 figures ----------------------------------------------------
// Memory(GiB) as torchtitan logs it: the caching allocator's max reserved memory, the largest over
// ranks; H100 with 96 GB HBM2e. bf16 parameters through FSDP2's mixed precision, fp32 master weights.
interface Published {
  table: string;
  model: NdModel;
  gpus: number;
  d: {
    replicate?: number;
    shard: number;
    tp: number;
    cp?: number;
    pp?: number;
    schedule?: PipelineSchedule;
    microbatches?: number;
  };
  local: number;
  seq: number;
  ac: { policy: CheckpointPolicy; everyN: number };
  measuredGiB: number;
  extras: string;
}
const L = TORCHTITAN_FLAVOURS.llama3;
const SEL = { policy: 'selective' as const, everyN: 1 };
const FULL = { policy: 'every_n' as const, everyN: 1 };
const PUBLISHED: Published[] = [
  {
    table: 'Table 1, FSDP',
    model: L['8B'],
    gpus: 8,
    d: { shard: 8, tp: 1 },
    local: 2,
    seq: 8192,
    ac: SEL,
    measuredGiB: 82.4,
    extras: 'eager',
  },
  {
    table: 'Table 1, FSDP + compile',
    model: L['8B'],
    gpus: 8,
    d: { shard: 8, tp: 1 },
    local: 2,
    seq: 8192,
    ac: SEL,
    measuredGiB: 77.0,
    extras: 'torch.compile',
  },
  {
    table: 'Table 3, FSDP',
    model: L['8B'],
    gpus: 128,
    d: { shard: 128, tp: 1 },
    local: 2,
    seq: 8192,
    ac: SEL,
    measuredGiB: 67.0,
    extras: 'eager',
  },
  {
    table: 'Table 2, FSDP 8, CP 1',
    model: L['8B'],
    gpus: 8,
    d: { shard: 8, tp: 1, cp: 1 },
    local: 1,
    seq: 32768,
    ac: FULL,
    measuredGiB: 83.9,
    extras: 'compile + float8',
  },
  {
    table: 'Table 2, FSDP 4, CP 2',
    model: L['8B'],
    gpus: 8,
    d: { shard: 4, tp: 1, cp: 2 },
    local: 1,
    seq: 65536,
    ac: FULL,
    measuredGiB: 84.2,
    extras: 'compile + float8',
  },
  {
    table: 'Table 2, FSDP 1, CP 8',
    model: L['8B'],
    gpus: 8,
    d: { shard: 1, tp: 1, cp: 8 },
    local: 1,
    seq: 262144,
    ac: FULL,
    measuredGiB: 84.5,
    extras: 'compile + float8',
  },
  {
    table: 'Table 4, 2D',
    model: L['70B'],
    gpus: 256,
    d: { shard: 32, tp: 8 },
    local: 16,
    seq: 8192,
    ac: FULL,
    measuredGiB: 71.9,
    extras: 'compile + float8',
  },
  {
    table: 'Table 5, 1F1B',
    model: L['405B'],
    gpus: 512,
    d: { shard: 8, tp: 8, pp: 8, schedule: '1F1B', microbatches: 32 },
    local: 32,
    seq: 8192,
    ac: FULL,
    measuredGiB: 82.5,
    extras: 'compile + float8 + async TP',
  },
  {
    table: 'Table 5, Interleaved 1F1B',
    model: L['405B'],
    gpus: 512,
    d: { shard: 8, tp: 8, pp: 8, schedule: 'Interleaved1F1B', microbatches: 32 },
    local: 32,
    seq: 8192,
    ac: FULL,
    measuredGiB: 72.7,
    extras: 'compile + float8 + async TP',
  },
  {
    table: 'Table 6, FSDP 8, CP 1',
    model: L['405B'],
    gpus: 512,
    d: { shard: 8, tp: 8, pp: 8, schedule: '1F1B', microbatches: 8 },
    local: 8,
    seq: 32768,
    ac: FULL,
    measuredGiB: 75.3,
    extras: 'compile + float8 + async TP',
  },
  {
    table: 'Table 6, FSDP 1, CP 8',
    model: L['405B'],
    gpus: 512,
    d: { shard: 1, tp: 8, cp: 8, pp: 8, schedule: '1F1B', microbatches: 8 },
    local: 8,
    seq: 262144,
    ac: FULL,
    measuredGiB: 84.9,
    extras: 'compile + float8 + async TP',
  },
];
const publishedRows = PUBLISHED.map((p) => {
  const pl = plan(p.model, p.d);
  const input: MemoryInput = {
    ...defaultMemoryInput(shapeOfNdModel(p.model), p.seq),
    framework: 'torchtitan',
    microBatch: (p.d.pp ?? 1) > 1 ? p.local / (p.d.microbatches ?? p.local) : p.local,
    nprocPerNode: 8,
    nnodes: p.gpus / 8,
    precision: { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' },
    checkpointing: p.ac,
    parallel: pl,
  };
  const e = estimateMemory(input);
  return { ...p, estimatedGiB: e.peak.total / GiB, error: e.peak.total / GiB / p.measuredGiB - 1 };
});
for (const r of publishedRows)
  console.log(
    `${r.table} (${r.model.name}, ${r.gpus} GPUs): published ${r.measuredGiB} GiB, estimated ${r.estimatedGiB.toFixed(1)} GiB (${(r.error * 100).toFixed(1)} %)`,
  );

// ---- results -------------------------------------------------------------------------------------
const commit = (() => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
})();
const date = new Date().toISOString().slice(0, 10);
const machine = {
  cpu: os.cpus()[0]?.model,
  cores: os.cpus().length,
  node: process.version,
  loadAverage1m: +os.loadavg()[0].toFixed(2),
};
const command = publishedOnly ? 'npm run bench:memory-nd -- --published-only' : 'npm run bench:memory-nd';
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
const med = (xs: number[]) => {
  const s = [...xs].map(Math.abs).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};
const md = [
  `# N-D parallel memory estimate vs PyTorch's memory tools and torchtitan's published figures (${date})`,
  '',
  `Command: \`${command}\` · commit ${commit} · machine: ${machine.cpu}, ${machine.cores} cores, load ${machine.loadAverage1m} · Node ${machine.node}.`,
  '',
  "## 1. PyTorch's memory tools on the CPU (fake process group, real tensors)",
  '',
  `One rank of each world, traced by \`torch.distributed._tools\` (FSDP2's FSDPMemTracker or MemTracker) over two AdamW steps of ${BENCH_MODEL.name}: 16 heads (8 key/value), SwiGLU 1536, vocabulary 4096, fp32, micro-batch 2 × 256 tokens, no checkpointing — the ops torchtitan's llama3 model runs, split with torchtitan's FSDP wrapping and TP plan (\`bench/memory-nd/measure.py\`). The estimate's allocator peak (no fragmentation margin, no CUDA context on the CPU) against the tracker's peak total. "Static": parameters and optimizer state at the peak (MemTracker counts gathered parameters as parameters: half of the estimate's gathered units are added to its static part there); "dynamic": the rest.`,
  '',
  '| run | measured MB | estimated MB | error | static measured / estimated MB | dynamic measured / estimated MB |',
  '|---|---:|---:|---:|---:|---:|',
  ...cpuRows.map(
    (r) =>
      `| ${r.run} | ${(r.measuredTotal / MB).toFixed(1)} | ${(r.estimated / MB).toFixed(1)} | ${pct(r.error)} | ${(r.measuredStatic / MB).toFixed(1)} / ${(r.estimatedStatic / MB).toFixed(1)} | ${(r.measuredDynamic / MB).toFixed(1)} / ${(r.estimatedDynamic / MB).toFixed(1)} |`,
  ),
  '',
  cpuRows.length
    ? `Median absolute error ${(med(cpuRows.map((r) => r.error)) * 100).toFixed(1)} %, largest ${(Math.max(...cpuRows.map((r) => Math.abs(r.error))) * 100).toFixed(1)} %.`
    : publishedOnly
      ? 'Not run in this invocation (`--published-only`): the last full run is the newest memory-nd-<date>.md without the suffix.'
      : 'Not run: no .venv.',
  '',
  "Not measured on the CPU: pipeline parallel (its schedules need a peer to send activations to; one process with a fake group has none), context parallel (torch's context_parallel runs its ring attention on CUDA SDPA kernels), expert parallel (torchtitan's all-to-all dispatch). Those parts of the model rest on the schedules' own arithmetic (pipeline.ts) and the published figures below.",
  '',
  "## 2. torchtitan's published figures (Llama 3.1, H100 96 GB)",
  '',
  'From `benchmarks/llama3_h100_202412_torchtitan.md` in pytorch/torchtitan at v0.2.2 (commit 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce): "Memory(GiB)" is the largest max-reserved memory over all ranks, so it includes the caching allocator\'s cached blocks; several rows ran with torch.compile and float8, which the estimate does not model (bf16 eager). The estimate is its peak per GPU with the CUDA context, NCCL and a 5 % fragmentation margin.',
  '',
  '| row | model | GPUs | degrees | local batch × seq | AC | run with | published GiB | estimated GiB | difference |',
  '|---|---|---:|---|---:|---|---|---:|---:|---:|',
  ...publishedRows.map(
    (r) =>
      `| ${r.table} | ${r.model.name} | ${r.gpus} | ${[`FSDP ${r.d.shard}`, ...(r.d.tp > 1 ? [`TP ${r.d.tp}`] : []), ...((r.d.cp ?? 1) > 1 ? [`CP ${r.d.cp}`] : []), ...((r.d.pp ?? 1) > 1 ? [`PP ${r.d.pp} ${r.d.schedule}`] : [])].join(' × ')} | ${r.local} × ${r.seq} | ${r.ac.policy === 'selective' ? 'selective (op)' : 'full'} | ${r.extras} | ${r.measuredGiB} | ${r.estimatedGiB.toFixed(1)} | ${pct(r.error)} |`,
  ),
  '',
];
const base = path.join(root, 'bench', 'results', `memory-nd-${date}${publishedOnly ? '-published' : ''}`);
writeFileSync(`${base}.md`, md.join('\n'));
writeFileSync(
  `${base}.json`,
  JSON.stringify(
    {
      date,
      command,
      commit,
      machine,
      cpu: cpuRows,
      published: publishedRows.map(({ model, ...r }) => ({ ...r, model: model.name })),
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${path.relative(root, base)}.md and .json`);
