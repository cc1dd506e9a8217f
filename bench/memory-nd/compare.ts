// `npm run bench:memory-nd`: the N-D parallel estimate (core/memory/parallel/) against
// 1. PyTorch's own memory tools on the CPU (bench/memory-nd/measure.py: one rank of a fake-process-group
//    world, real tensors, FSDP2's FSDPMemTracker or MemTracker) for FSDP2, tensor parallel with and
//    without sequence parallel, and FSDP × TP, at world sizes 2–64; and for two small MoE models
//    (DeepSeek-style: latent attention, a dense first layer, shared experts; Mixtral-style: GQA, top-2
//    of 8) under FSDP2 alone, with and without full activation checkpointing, fp32 and bf16;
// 2. the figures torchtitan published for Llama 3.1 8B / 70B / 405B on H100s
//    (benchmarks/llama3_h100_202412_torchtitan.md at torchtitan v0.2.2).
// Writes bench/results/memory-nd-<date>.md and .json with the machine, load, command and commit.
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { shapeOfNdModel } from '../../core/memory/inputs/from-torchtitan';
import { defaultMemoryInput, type CheckpointPolicy, type MemoryInput } from '../../core/memory/memory-input';
import { totalParameters, type NdModel } from '../../core/memory/parallel/nd-model';
import { TORCHTITAN_FLAVOURS } from '../../core/memory/parallel/torchtitan-flavours';
import { lastJsonLine, plan, type BenchDegrees } from './bench-plan';
import { comparePipeline } from './compare-pp';
import { benchContext } from '../run-context';

const root = path.resolve(__dirname, '../..');
const python = path.join(root, '.venv', 'bin', 'python');
// `-- --published-only`: part 2 alone (seconds, not the ~35 min of part 1's tracked runs), written
// beside the full results as memory-nd-<date>-published.{md,json}.
const publishedOnly = process.argv.includes('--published-only');
// `-- --moe-only`: the MoE rows of part 1 alone (about 10 minutes on 2 cores; the two bf16 rows take most), as
// memory-nd-moe-<date>.{md,json}.
const moeOnly = process.argv.includes('--moe-only');
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

// The MoE rows. Expert parallel cannot be among them: its all-to-all token exchange needs real peers,
// so every MoE row runs with ep = 1 (each rank holds a 1/world shard of every expert, as torchtitan's FSDP does then).
const BENCH_DEEPSEEK: NdModel = {
  // torchtitan's deepseek_v3 debugmodel, but qk_nope_head_dim 64 instead of 128: q·k and v heads are then
  // both 128 wide and the CPU runs SDPA's flash kernel; with unequal widths it falls back to the math
  // path, which keeps the s² scores that the memory-efficient kernel a GPU runs would not.
  name: 'bench DeepSeek-style MoE (256 wide, 6 layers, 8 experts top-3, 2 shared)',
  vocabSize: 2048,
  dModel: 256,
  nLayers: 6,
  nHeads: 16,
  nKvHeads: 16,
  headDim: 128,
  mla: { qLoraRank: 0, kvLoraRank: 512, qkNopeHeadDim: 64, qkRopeHeadDim: 64, vHeadDim: 128 },
  ffnHidden: 1024,
  mlp: 'swiglu',
  moe: { experts: 8, topK: 3, expertFfn: 256, shared: 2, denseLayers: 1 },
  tieEmbeddings: false,
};
const BENCH_MIXTRAL: NdModel = {
  name: 'bench Mixtral-style MoE (512 wide, 4 layers, 8 experts top-2)',
  vocabSize: 4096,
  dModel: 512,
  nLayers: 4,
  nHeads: 16,
  nKvHeads: 8,
  headDim: 32,
  ffnHidden: 768,
  mlp: 'swiglu',
  moe: { experts: 8, topK: 2, expertFfn: 768, shared: 0, denseLayers: 0 },
  tieEmbeddings: false,
};
// bf16: FSDP2's MixedPrecisionPolicy (bf16 compute, fp32 reduce and master weights), torchtitan's default;
// bf16 matmuls are slow on the CPU, so only two rows.
const MOE_RUNS: Array<{ model: NdModel; world: number; tracker: 'fsdp' | 'mem'; ac: boolean; bf16?: boolean }> = [
  { model: BENCH_DEEPSEEK, world: 2, tracker: 'fsdp', ac: false },
  { model: BENCH_DEEPSEEK, world: 8, tracker: 'fsdp', ac: false },
  { model: BENCH_DEEPSEEK, world: 64, tracker: 'fsdp', ac: false },
  { model: BENCH_DEEPSEEK, world: 8, tracker: 'mem', ac: false },
  { model: BENCH_DEEPSEEK, world: 8, tracker: 'fsdp', ac: true },
  { model: BENCH_DEEPSEEK, world: 64, tracker: 'fsdp', ac: true },
  { model: BENCH_DEEPSEEK, world: 8, tracker: 'fsdp', ac: false, bf16: true },
  { model: BENCH_MIXTRAL, world: 2, tracker: 'fsdp', ac: false },
  { model: BENCH_MIXTRAL, world: 8, tracker: 'fsdp', ac: false },
  { model: BENCH_MIXTRAL, world: 64, tracker: 'fsdp', ac: false },
  { model: BENCH_MIXTRAL, world: 8, tracker: 'fsdp', ac: true },
  { model: BENCH_MIXTRAL, world: 8, tracker: 'fsdp', ac: false, bf16: true },
];

/** measure.py's flags for a model: the tracker builds exactly the model the estimate is given. */
function modelArgs(m: NdModel): string[] {
  const args = [
    ['--dim', m.dModel],
    ['--layers', m.nLayers],
    ['--heads', m.nHeads],
    ['--kv-heads', m.nKvHeads],
    ['--head-dim', m.headDim],
    ['--ffn', m.ffnHidden],
    ['--vocab', m.vocabSize],
  ];
  if (m.moe)
    args.push(
      ['--experts', m.moe.experts],
      ['--top-k', m.moe.topK],
      ['--expert-ffn', m.moe.expertFfn],
      ['--shared-experts', m.moe.shared],
      ['--dense-layers', m.moe.denseLayers],
    );
  if (m.mla)
    args.push(
      ['--kv-lora-rank', m.mla.kvLoraRank],
      ['--q-lora-rank', m.mla.qLoraRank],
      ['--qk-nope-head-dim', m.mla.qkNopeHeadDim],
      ['--qk-rope-head-dim', m.mla.qkRopeHeadDim],
      ['--v-head-dim', m.mla.vHeadDim],
    );
  return args.flatMap(([k, v]) => [String(k), String(v)]);
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

function moeInput(r: (typeof MOE_RUNS)[number]): MemoryInput {
  return {
    ...defaultMemoryInput(shapeOfNdModel(r.model), 256),
    framework: 'torchtitan',
    device: 'cpu',
    microBatch: 2,
    nprocPerNode: r.world,
    precision: r.bf16
      ? { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' }
      : { param: 'float32', reduce: 'float32', activation: 'float32' },
    checkpointing: r.ac ? { policy: 'every_n', everyN: 1 } : { policy: 'none', everyN: 1 },
    parallel: plan(r.model, { shard: r.world, tp: 1 }),
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

interface Tracked {
  torch: string;
  param_elements: number;
  peak: Record<string, number>;
}

function track(args: string[]): Tracked {
  const m = lastJsonLine<Tracked>(python, path.join(__dirname, 'measure.py'), args);
  torchVersion = m.torch;
  return m;
}
let torchVersion: string | undefined;

/** One row: the tracker's peak against the estimate's allocator peak, split into static and dynamic. */
function compareRow(run: string, m: Tracked, tracker: 'fsdp' | 'mem', input: MemoryInput): CpuRow {
  const get = (suffix: string) =>
    Object.entries(m.peak)
      .filter(([k]) => k.endsWith(suffix))
      .reduce((s, [, v]) => s + v, 0);
  const measuredTotal = m.peak.Total;
  // '.SHARDED_PARAM' with its dot: UNSHARDED_PARAM (the gathered units, dynamic) ends with SHARDED_PARAM too.
  const measuredStatic =
    tracker === 'fsdp'
      ? get('.SHARDED_PARAM') + get('.OPT') + get('BUFFER')
      : get('.PARAM') + get('.OPT') + get('BUFFER');
  const e = estimateMemory(input);
  const staticIds = new Set(['params.master', 'optimizer.adamw']);
  const peakPhase = e.peakPhase;
  const estimatedStatic =
    e.terms.filter((t) => staticIds.has(t.id)).reduce((s, t) => s + t.bytes[peakPhase], 0) +
    (tracker === 'mem' ? (e.terms.find((t) => t.id === 'comm.gathered')?.bytes[peakPhase] ?? 0) / 2 : 0);
  console.log(
    `${run}: measured ${(measuredTotal / MB).toFixed(1)} MB, estimated ${(e.allocatorPeak / MB).toFixed(1)} MB (${((e.allocatorPeak / measuredTotal - 1) * 100).toFixed(1)} %)`,
  );
  return {
    run,
    measuredTotal,
    estimated: e.allocatorPeak,
    error: e.allocatorPeak / measuredTotal - 1,
    measuredStatic,
    estimatedStatic,
    measuredDynamic: measuredTotal - measuredStatic,
    estimatedDynamic: e.allocatorPeak - estimatedStatic,
  };
}

// `-- --pp-only`: pipeline parallel in real processes (compare-pp.ts) alone, a few minutes;
// memory-nd-pp-<date>.{md,json}.
if (process.argv.includes('--pp-only')) {
  if (!existsSync(python)) {
    console.error(
      `no ${python}: the pipeline comparison needs the project's Python environment (npm test's set-up makes it)`,
    );
    process.exit(1);
  }
  comparePipeline(root, python, BENCH_MODEL);
  process.exit(0);
}

const trackerName = (t: 'fsdp' | 'mem') => (t === 'fsdp' ? 'FSDPMemTracker' : 'MemTracker');
const haveVenv = existsSync(python);
if (!haveVenv && !publishedOnly)
  console.error(`no ${python}: the CPU comparison needs the project's Python environment (npm test's set-up makes it)`);

const cpuRows: CpuRow[] = [];
if (publishedOnly || moeOnly) {
  console.log(`${publishedOnly ? '--published-only' : '--moe-only'}: part 1's dense rows not run`);
} else if (haveVenv) {
  for (const r of RUNS) {
    const m = track([
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
    ]);
    const run = `${r.tp > 1 ? `TP ${r.tp}${r.sp ? '+SP' : ' (no SP)'}` : 'FSDP2'}${r.world / r.tp > 1 && r.tp > 1 ? ` × FSDP ${r.world / r.tp}` : r.tp === 1 ? ` over ${r.world}` : ''} (${trackerName(r.tracker)})`;
    cpuRows.push(compareRow(run, m, r.tracker, cpuInput(r)));
  }
}

interface MoeRow extends CpuRow {
  model: string;
  world: number;
  ac: boolean;
  dtype: string;
  tracker: string;
}
const moeRows: MoeRow[] = [];
if (!publishedOnly && haveVenv) {
  for (const r of MOE_RUNS) {
    const m = track([
      '--world',
      String(r.world),
      '--tracker',
      r.tracker,
      '--ac',
      r.ac ? 'full' : 'none',
      ...(r.bf16 ? ['--bf16'] : []),
      ...modelArgs(r.model),
    ]);
    // The same model on both sides, or the comparison means nothing.
    if (m.param_elements !== totalParameters(r.model))
      throw new Error(
        `measure.py built ${m.param_elements} parameters for ${r.model.name}; the estimate counts ${totalParameters(r.model)}`,
      );
    const model = r.model === BENCH_DEEPSEEK ? 'DeepSeek-style' : 'Mixtral-style';
    const run = `${model}, FSDP2 over ${r.world}${r.ac ? ', full AC' : ''}${r.bf16 ? ', bf16' : ''} (${trackerName(r.tracker)})`;
    moeRows.push({
      ...compareRow(run, m, r.tracker, moeInput(r)),
      model,
      world: r.world,
      ac: r.ac,
      dtype: r.bf16 ? 'bf16 compute, fp32 master and reduce' : 'fp32',
      tracker: trackerName(r.tracker),
    });
  }
}

// ---- 2. torchtitan's published H100 figures ----------------------------------------------------
// Memory(GiB) as torchtitan logs it: the caching allocator's max reserved memory, the largest over
// ranks; H100 with 96 GB HBM2e. bf16 parameters through FSDP2's mixed precision, fp32 master weights.
interface Published {
  table: string;
  model: NdModel;
  gpus: number;
  d: BenchDegrees;
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
for (const r of moeOnly ? [] : publishedRows)
  console.log(
    `${r.table} (${r.model.name}, ${r.gpus} GPUs): published ${r.measuredGiB} GiB, estimated ${r.estimatedGiB.toFixed(1)} GiB (${(r.error * 100).toFixed(1)} %)`,
  );

// ---- results -------------------------------------------------------------------------------------
const { commit, date, machine } = benchContext(root);
const command = publishedOnly
  ? 'npm run bench:memory-nd -- --published-only'
  : moeOnly
    ? 'npm run bench:memory-nd -- --moe-only'
    : 'npm run bench:memory-nd';
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
const med = (xs: number[]) => {
  const s = [...xs].map(Math.abs).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};
const header = `Command: \`${command}\` · commit ${commit} · machine: ${machine.cpu}, ${machine.cores} cores, load ${machine.loadAverage1m} · Node ${machine.node} · PyTorch ${torchVersion ?? 'not run'}.`;
const moeSection = [
  "## 1b. MoE models, PyTorch's memory tools on the CPU (fake process group, real tensors)",
  '',
  `One rank of each world, as in part 1 (fp32 unless the row says bf16: FSDP2's MixedPrecisionPolicy with bf16 parameters in compute and fp32 reduce, torchtitan's default; micro-batch 2 × 256 tokens, two AdamW steps), for ${BENCH_DEEPSEEK.name} — torchtitan's deepseek_v3 debugmodel with multi-head latent attention (kv_lora_rank 512, q·k heads 64 + 64 rotary, v heads 128: qk_nope 64 instead of the debugmodel's 128, so that q·k and v heads are equally wide and the CPU runs SDPA's flash kernel, not the math path that keeps the s² scores a GPU's memory-efficient kernel does not), a dense first layer (SwiGLU 1024), vocabulary 2048 — and ${BENCH_MIXTRAL.name} (16 heads, 8 key/value, vocabulary 4096, no shared experts). The MoE layers run torchtitan's ops: an fp32 softmax router with top-k, the routed tokens gathered in expert order, the experts' SwiGLU through torch._grouped_mm (in the model's dtype: torchtitan's casts to bf16 are no-ops under its bf16 mixed precision), the scores applied, scatter_add onto the shared experts' output; FSDP2 wraps each block as torchtitan's apply_fsdp does (experts sharded on dim 1 when the world outnumbers them). Full AC: every block in torch's checkpoint_wrapper (torchtitan's mode "full"). The estimate is given the same model (compare.ts: BENCH_DEEPSEEK, BENCH_MIXTRAL, passed to measure.py flag by flag), and measure.py's parameter count is checked against the estimate's for every row. Expert parallel is not measured: its all-to-all needs real peers, which one process with a fake group does not have, so every row has EP = 1 and each rank holds 1/world of every expert. The router's choices depend on the data, but with EP = 1 a rank's experts see exactly tokens × top-k rows whatever the balance.`,
  '',
  '| run | world | measured MB | estimated MB | error | static measured / estimated MB | dynamic measured / estimated MB |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...moeRows.map(
    (r) =>
      `| ${r.run} | ${r.world} | ${(r.measuredTotal / MB).toFixed(1)} | ${(r.estimated / MB).toFixed(1)} | ${pct(r.error)} | ${(r.measuredStatic / MB).toFixed(1)} / ${(r.estimatedStatic / MB).toFixed(1)} | ${(r.measuredDynamic / MB).toFixed(1)} / ${(r.estimatedDynamic / MB).toFixed(1)} |`,
  ),
  '',
  moeRows.length
    ? `Median absolute error ${(med(moeRows.map((r) => r.error)) * 100).toFixed(1)} %, largest ${(Math.max(...moeRows.map((r) => Math.abs(r.error))) * 100).toFixed(1)} %.`
    : 'Not run: no .venv.',
  '',
];
const md = [
  `# N-D parallel memory estimate vs PyTorch's memory tools and torchtitan's published figures (${date})`,
  '',
  header,
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
  ...(publishedOnly ? [] : moeSection),
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
const base = path.join(
  root,
  'bench',
  'results',
  moeOnly ? `memory-nd-moe-${date}` : `memory-nd-${date}${publishedOnly ? '-published' : ''}`,
);
const moeMd = [
  `# N-D parallel memory estimate vs PyTorch's memory tools for MoE models (${date})`,
  '',
  header,
  '',
  "The dense rows and torchtitan's published figures are in the newest memory-nd-<date>.md (`npm run bench:memory-nd`, which runs these rows too).",
  '',
  ...moeSection,
];
writeFileSync(`${base}.md`, (moeOnly ? moeMd : md).join('\n'));
writeFileSync(
  `${base}.json`,
  JSON.stringify(
    {
      date,
      command,
      commit,
      machine: { ...machine, torch: torchVersion },
      ...(moeOnly ? {} : { cpu: cpuRows }),
      ...(publishedOnly ? {} : { moe: moeRows, moeModels: [BENCH_DEEPSEEK, BENCH_MIXTRAL] }),
      ...(moeOnly ? {} : { published: publishedRows.map(({ model, ...r }) => ({ ...r, model: model.name })) }),
    },
    null,
    2,
  ) + '\n',
);
console.log(`wrote ${path.relative(root, base)}.md and .json`);
