// `npx fsdp-estimate CONFIG [--gpu NAME] [--nproc N] [--json]`: the editor-free memory estimate of
// a run config, DeepSpeed config or accelerate config — a table by category and phase, or JSON.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { estimateMemory, describePolicy } from '../core/memory/estimate';
import { hostTarget } from '../core/memory/gpu-presets';
import { isConfigInputError, type ConfigMemoryInput } from '../core/memory/inputs/config-input';
import { parseOptionWords, type EstimateOptions } from '../core/memory/inputs/estimate-options';
import { hfModelSource } from '../core/memory/inputs/hf-model';
import { readConfigForEstimate } from '../core/memory/inputs/read-config';
import { fewestGpus, maxMicroBatch } from '../core/memory/inverse-questions';
import { MEMORY_CATEGORIES, PHASES, type MemoryEstimate } from '../core/memory/memory-estimate';
import { worldSize } from '../core/memory/memory-input';
import { parameterCounts } from '../core/memory/model-shape';
import { notModelledBound, summaryLine, unitOf } from '../core/memory/summary';

const USAGE = `usage: fsdp-estimate CONFIG [--gpu NAME] [--nproc N] [--nnodes N] [--json]
                     [--model PRESET|PATH|HF-ID] [--seq-len N] [--micro-batch N] [--checkpointing none|selective|every_n[:N]]
                     [--framework fsdp-studio|pytorch|deepspeed]

CONFIG is an FSDP Studio run config, a DeepSpeed ds_config.json or an accelerate config.
--model: a preset, a folder holding a Hugging Face config.json, or a model id in the local Hugging
Face cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub; nothing is downloaded).
GPU names: A100-40GB A100-80GB H100-80GB H200-141GB L4-24GB RTX4090-24GB, or a size like 48GiB.`;

// Flags that map onto the estimate options the config's own "fsdp-studio:" comment can also set.
const OPTION_FLAGS = [
  'gpu',
  'nproc',
  'nnodes',
  'model',
  'seq-len',
  'micro-batch',
  'checkpointing',
  'framework',
  'attention',
] as const;

export function main(argv: string[]): number {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        ...Object.fromEntries(OPTION_FLAGS.map((f) => [f, { type: 'string' as const }])),
      },
    });
  } catch (e) {
    console.error(`fsdp-estimate: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  if (parsed.positionals.length !== 1) {
    console.error(`fsdp-estimate: give exactly one config file\n${USAGE}`);
    return 2;
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const words = OPTION_FLAGS.filter((f) => values[f] !== undefined).map((f) => `${f}=${String(values[f])}`);
  const { options, problems } = parseOptionWords(words);
  if (problems.length) {
    console.error(
      `fsdp-estimate: ${problems.map((p) => `--${p.message.replace(/^(\w+)/, (k) => k.replace(/_/g, '-'))}`).join('; ')}`,
    );
    return 2;
  }
  const file = parsed.positionals[0];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    console.error(`fsdp-estimate: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return 2;
  }
  const read = readConfigForEstimate(text, file, options, undefined, hfModelSource(path.resolve(file)));
  if (isConfigInputError(read)) {
    console.error(read.error);
    return 2;
  }
  const estimate = estimateMemory(withTarget(read, options));
  console.log(parsed.values.json ? JSON.stringify(asJson(file, read, estimate), null, 2) : table(file, read, estimate));
  return 0;
}

/** A CPU run of our runtime without a GPU named is checked against this machine's memory. */
function withTarget(read: ConfigMemoryInput, options: EstimateOptions): ConfigMemoryInput['input'] {
  const input = read.input;
  if (input.gpu || options.gpu || input.device !== 'cpu') return input;
  return {
    ...input,
    gpu: {
      ...hostTarget(Math.floor(os.totalmem() / input.nprocPerNode)),
      name: `this machine's memory / ${input.nprocPerNode} rank${input.nprocPerNode > 1 ? 's' : ''}`,
    },
  };
}

function asJson(file: string, read: ConfigMemoryInput, e: MemoryEstimate) {
  const i = e.input;
  const bytes = Object.fromEntries([
    ...MEMORY_CATEGORIES.map((c) => [c, Math.round(e.peak[c])]),
    ['total', Math.round(e.peak.total)],
  ]);
  return {
    config: path.resolve(file),
    kind: read.kind,
    framework: i.framework,
    model: {
      name: i.model.name,
      params: parameterCounts(i.model).total,
      layers: i.model.nLayers,
      dModel: i.model.dModel,
      ...(read.model
        ? {
            from: read.model.from,
            ...(read.model.namedBy ? { namedBy: read.model.namedBy } : {}),
            ...(read.model.assumed ? { assumed: true } : {}),
          }
        : {}),
    },
    run: {
      strategy: i.strategy,
      nprocPerNode: i.nprocPerNode,
      nnodes: i.nnodes,
      microBatch: i.microBatch,
      seqLen: i.seqLen,
      precision: i.precision,
      checkpointing: e.checkpointing,
    },
    bytes,
    peakPhase: e.peakPhase,
    phases: Object.fromEntries(
      e.phases.map((p) => [
        p.phase,
        Object.fromEntries([...MEMORY_CATEGORIES, 'total' as const].map((c) => [c, Math.round(p.bytes[c])])),
      ]),
    ),
    allocatorPeak: Math.round(e.allocatorPeak),
    ...(e.reservedPeak !== undefined ? { reservedPeak: Math.round(e.reservedPeak) } : {}),
    ...(e.unsure
      ? { unsure: { why: e.unsure.why, low: Math.round(e.unsure.low), high: Math.round(e.unsure.high) } }
      : {}),
    host: { perRank: Math.round(e.host.perRank), perNode: Math.round(e.host.perNode) },
    // What the config sets that the estimate leaves out; 'upper': the figures are an upper bound.
    ...(i.notModelled?.length ? { notModelled: { bound: notModelledBound(i), settings: i.notModelled } } : {}),
    fit: e.fit
      ? {
          gpu: e.fit.gpu.id,
          capacityBytes: e.fit.gpu.memoryBytes,
          fits: e.fit.fits,
          headroomBytes: Math.round(e.fit.headroomBytes),
          ...(e.fit.atRangeTop ? { atRangeTop: true } : {}),
        }
      : null,
    maxMicroBatch: e.fit ? maxMicroBatch(i, e.fit.gpu.memoryBytes) : null,
    fewestGpus: e.fit && e.fit.gpu.kind === 'gpu' ? gpusNeeded(e) : null,
    notes: [...read.notes, ...e.notes],
  };
}

function table(file: string, read: ConfigMemoryInput, e: MemoryEstimate): string {
  const i = e.input;
  const unit =
    e.peak.total >= 1024 ** 4
      ? { name: 'TiB', div: 1024 ** 4, digits: 2 }
      : e.peak.total >= 1024 ** 3
        ? { name: 'GiB', div: 1024 ** 3, digits: 2 }
        : { name: 'MiB', div: 1024 ** 2, digits: 1 };
  const text = (b: number) => (b / unit.div).toFixed(unit.digits);
  // Columns as wide as the widest number, so large values never run together.
  const cells = [
    ...e.phases.flatMap((p) => [...MEMORY_CATEGORIES.map((c) => text(p.bytes[c])), text(p.bytes.total)]),
    ...PHASES,
  ];
  const width = Math.max(...cells.map((c) => c.length)) + 2;
  const fmt = (b: number) => text(b).padStart(width);
  const per = unitOf(e);
  const who = {
    'fsdp-studio': 'FSDP Studio runtime',
    pytorch: i.strategy === 'NO_SHARD' ? 'PyTorch DDP' : 'PyTorch FSDP',
    deepspeed: 'DeepSpeed ZeRO',
    torchtitan: 'torchtitan (N-D parallel)',
  }[i.framework];
  const origin =
    read.model && read.kind !== 'run-config'
      ? ` (${read.model.assumed ? 'assumed' : read.model.from}${read.model.namedBy ? `, named by ${read.model.namedBy}` : ''})`
      : '';
  const lines = [
    `${file} — ${who}, ${i.strategy} over ${worldSize(i)} ${per}${worldSize(i) > 1 ? 's' : ''}${i.nnodes > 1 ? ` (${i.nnodes} nodes)` : ''}`,
    `model ${i.model.name}${origin}: ${(parameterCounts(i.model).total / 1e6).toFixed(1)} M parameters, ${i.model.nLayers} layers, d_model ${i.model.dModel}; micro-batch ${i.microBatch} × ${i.seqLen} tokens; ${i.precision.param}; checkpointing ${describePolicy(e.checkpointing)}`,
    '',
    `${`per ${per}, ${unit.name}`.padEnd(14)}${PHASES.map((p) => p.padStart(width)).join('')}`,
    ...MEMORY_CATEGORIES.map((c) => `${c.padEnd(14)}${e.phases.map((p) => fmt(p.bytes[c])).join('')}`),
    `${'total'.padEnd(14)}${e.phases.map((p) => fmt(p.bytes.total)).join('')}    ← peak: ${e.peakPhase}`,
  ];
  if (e.reservedPeak !== undefined)
    lines.push(
      `caching allocator: ${text(e.allocatorPeak)} ${unit.name} allocated at the peak, ${text(e.reservedPeak)} ${unit.name} reserved (the total adds the CUDA context: what nvidia-smi shows)`,
    );
  if (e.host.perRank > 0)
    lines.push(
      `host memory (offload): ${text(e.host.perRank)} ${unit.name} per ${per}, ${text(e.host.perNode)} ${unit.name} per node`,
    );
  lines.push('', summaryLine(e));
  if (e.fit) {
    const b = maxMicroBatch(i, e.fit.gpu.memoryBytes);
    // An estimate that leaves out what the config sets says its inverse answers as its own, not as sure.
    const byIt = notModelledBound(i) ? 'by this estimate (see what it leaves out above), ' : '';
    lines.push(
      byIt +
        (b > 0
          ? `largest micro-batch that fits ${e.fit.gpu.name}: ${b}`
          : `not even micro-batch 1 fits ${e.fit.gpu.name}`),
    );
    if (!e.fit.fits && e.fit.gpu.kind === 'gpu') {
      const n = gpusNeeded(e);
      lines.push(
        n
          ? `fewest ${e.fit.gpu.name} GPUs that fit it (${i.strategy}): ${n.total} (${n.nprocPerNode} per node × ${n.nnodes})`
          : `${byIt}more ${e.fit.gpu.name} GPUs do not make it fit with ${i.strategy}`,
      );
    }
  }
  const notes = [...read.notes, ...e.notes];
  if (notes.length) lines.push('', ...notes.map((n) => `note: ${n}`));
  return lines.join('\n');
}

function gpusNeeded(e: MemoryEstimate): { total: number; nprocPerNode: number; nnodes: number } | null {
  const found = fewestGpus(e.input, e.fit!.gpu.memoryBytes);
  return found
    ? { total: found.nprocPerNode * found.nnodes, nprocPerNode: found.nprocPerNode, nnodes: found.nnodes }
    : null;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
