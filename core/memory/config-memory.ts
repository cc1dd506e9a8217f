// The estimate of a config as the editor shows it inline: the hint's title, and, when it does not
// fit the target, a warning with the changes that would make it fit as quick fixes. Used by the
// language server (language-server/features/memory-hints.ts); pure, so it is tested without one.
import type { ConfigEdit, ConfigFix } from '../config/config-edits';
import type { ConfigKind } from '../config/document-kind';
import { TORCHTITAN_RELEASE } from '../config/torchtitan-config';
import type { ConfigProblem } from '../config/schema-problems';
import type { SourceRange } from '../config/source-document';
import { estimateMemory } from './estimate';
import { findGpu, hostTarget } from './gpu-presets';
import { isConfigInputError, type ConfigAssignment, type ConfigMemoryInput } from './inputs/config-input';
import type { ModelFamily, ModelOrigin, ModelSource } from './inputs/model-from-options';
import { readConfigForEstimate } from './inputs/read-config';
import { knobEffects, maxMicroBatch } from './inverse-questions';
import { fewestGpusAnyDegrees } from './parallel/nd-search';
import { describeChange } from './memory-change';
import type { MemoryEstimate } from './memory-estimate';
import type { MemoryInput } from './memory-input';
import {
  formatBytes,
  formatParameters,
  notModelledBound,
  notModelledLong,
  shortLine,
  summaryLine,
  unitOf,
} from './summary';

export interface ConfigMemory {
  read: ConfigMemoryInput;
  estimate: MemoryEstimate;
  /** The hint, short enough for the editor: "≈ 23.4 GiB / GPU — fits H100 80GB — Llama 2 7B". */
  title: string;
  /** All of it, on hover: "≈ 23.4 GiB / GPU (params 3.1 · …) — fits H100 80GB — for Llama 2 7B (6.74 B parameters, preset)". */
  detail: string;
  /** When the peak exceeds the target. */
  problem?: ConfigProblem;
  /**
   * Nothing names the model: the hint asks which ("which model? — choose") instead of answering for
   * a stand-in; `estimate` is the stand-in's, for the panel, which says it is one.
   */
  askModel?: { why: string; family?: ModelFamily };
}

/** The hint's words when no model is named. */
export const ASK_MODEL_TITLE = 'which model? — choose';

export interface TargetDefaults {
  /** The GPU of configs that name none (setting fsdp.estimator.gpu). */
  gpu?: string;
  /** This machine's memory: the target of CPU runs of our runtime that name no GPU. */
  hostMemoryBytes?: number;
}

export function configMemory(
  kind: ConfigKind,
  text: string,
  fileName: string,
  defaults: TargetDefaults = {},
  source?: ModelSource,
): ConfigMemory | { error: string; range?: SourceRange } {
  const read = readConfigForEstimate(text, fileName, {}, kind, source);
  if (isConfigInputError(read)) return { error: read.error, ...(read.range ? { range: read.range } : {}) };
  const input = withDefaultTarget(read.input, defaults);
  const estimate = estimateMemory(input);
  if (read.kind !== 'run-config' && read.model?.assumed) {
    const m = read.model;
    return {
      read,
      estimate,
      title: ASK_MODEL_TITLE,
      detail: `No estimate until the model is known: ${m.why ?? 'nothing names the model'}. Choose it (kept for this file in the workspace, not written into it).`,
      askModel: { why: m.why ?? 'nothing names the model', ...(m.family ? { family: m.family } : {}) },
    };
  }
  // A run config's model is its own model section, not worth naming, unless a folder gave it (model.from_hf).
  const named = read.kind !== 'run-config' || read.model?.namedBy !== undefined;
  const model = named ? modelWords(read.model) : undefined;
  const name = named ? read.model?.name : undefined;
  // The TOML job files are torchtitan 0.2.x's (0.3 configures runs in Python: ./inputs/from-torchtitan-python.ts).
  const release = read.kind === 'torchtitan' ? ` (torchtitan ${TORCHTITAN_RELEASE} TOML)` : '';
  return {
    read,
    estimate,
    title: `${shortLine(estimate)}${name ? ` — ${name}` : ''}${release}`,
    detail: `${summaryLine(estimate)}${model ? ` — ${model}` : ''}${release}`,
    ...(estimate.fit && !estimate.fit.fits ? { problem: doesNotFit(read, estimate) } : {}),
  };
}

/** "for meta-llama/Llama-3.1-8B (8.03 B parameters, Hugging Face cache, named by train.sh:3)". */
export function modelWords(m: ModelOrigin | undefined): string | undefined {
  if (!m) return undefined;
  if (m.assumed) return `for ${m.name}, assumed: add "fsdp-studio: model=…"`;
  const cached = /[\\/]models--[^\\/]+[\\/]snapshots[\\/]/.test(m.from);
  const from =
    m.from === 'preset' || m.from === 'custom'
      ? m.from
      : cached
        ? 'Hugging Face cache'
        : m.from.split(/[\\/]/).slice(-2).join('/');
  return `for ${m.name} (${formatParameters(m.parameters)} parameters, ${from}${m.namedBy ? `, named by ${m.namedBy}` : ''})`;
}

function withDefaultTarget(input: MemoryInput, defaults: TargetDefaults): MemoryInput {
  if (input.gpu) return input;
  const gpu = defaults.gpu ? findGpu(defaults.gpu) : undefined;
  if (gpu) return { ...input, gpu };
  if (input.device === 'cpu' && defaults.hostMemoryBytes) {
    return {
      ...input,
      gpu: {
        ...hostTarget(Math.floor(defaults.hostMemoryBytes / input.nprocPerNode)),
        name: `this machine's memory / ${input.nprocPerNode} rank${input.nprocPerNode > 1 ? 's' : ''}`,
      },
    };
  }
  return input;
}

function doesNotFit(read: ConfigMemoryInput, e: MemoryEstimate): ConfigProblem {
  const fit = e.fit!;
  const input = e.input;
  const best = maxMicroBatch(input, fit.gpu.memoryBytes);
  const fitting = knobEffects(input).filter((k) => k.fits);
  const ideas = [
    best > 0 ? `micro-batch ${best} fits` : 'not even micro-batch 1 fits',
    ...fitting
      .filter((k) => k.change.knob !== 'microBatch')
      .slice(0, 3)
      .map((k) => `${k.label} fits (≈ ${formatBytes(k.peakBytes)})`),
  ];
  if (input.framework === 'torchtitan' && !fitting.some((k) => k.change.knob === 'parallel')) {
    // No split of these GPUs holds it: say how many GPUs would, with which degrees.
    const few = fewestGpusAnyDegrees(input, fit.gpu.memoryBytes);
    ideas.push(
      few
        ? `${few.gpus} GPUs would hold it (${describeChange({ knob: 'parallel', value: few.best.degrees })}, ≈ ${formatBytes(few.best.estimate.peak.total)})`
        : 'no split of up to 4096 GPUs holds it',
    );
  }
  // The least disruptive fix first: the largest micro-batch that fits, then the biggest savings.
  const ordered = [
    ...fitting.filter((k) => k.change.knob === 'microBatch').sort((a, b) => b.peakBytes - a.peakBytes),
    ...fitting.filter((k) => k.change.knob !== 'microBatch'),
  ];
  const fixes: ConfigFix[] = [];
  for (const k of ordered) {
    const assignments = read.assignmentsFor(k.change);
    // Quick fixes edit the config's own keys; what only the fsdp-studio comment can say is left to the panel.
    if (typeof assignments === 'string' || !assignments.every(isKeyAssignment)) continue;
    const edits = assignments.map((a): ConfigEdit =>
      a.value === undefined ? { kind: 'remove', path: a.path } : { kind: 'set', path: a.path, value: a.value },
    );
    fixes.push({
      title: `Memory: ${k.label} (≈ ${formatBytes(k.peakBytes)} per ${unitOf(e)}, fits ${fit.gpu.name})`,
      edits,
      ...(fixes.length === 0 ? { preferred: true } : {}),
    });
  }
  return {
    // An estimate that leaves out what the config sets (LoRA, 4-bit, …) is no ground for a warning.
    severity: notModelledBound(input) ? 'information' : 'warning',
    path: [],
    code: 'memory.does-not-fit',
    message: `${needs(e)} per ${unitOf(e)} at its peak (${e.peakPhase}), ${formatBytes(-fit.headroomBytes)} more than ${fit.gpu.name} has; ${ideas.join('; ')}`,
    range: read.fitAnchor,
    fixes,
  };
}

/** "needs ≈ 23.4 GiB", or where the estimate is unsure "may need up to 27.1 GiB (≈ 23.4 GiB; unsure: why)". */
function needs(e: MemoryEstimate): string {
  const bound = notModelledBound(e.input);
  if (bound)
    return `may need ${bound === 'upper' ? 'up to' : 'about'} ${formatBytes(e.unsure?.high ?? e.peak.total)} (${bound === 'upper' ? 'an upper bound' : 'unsure'}: ${notModelledLong(e.input)} not modelled)`;
  if (!e.unsure) return `needs ≈ ${formatBytes(e.peak.total)}`;
  return `may need up to ${formatBytes(e.unsure.high)} (≈ ${formatBytes(e.peak.total)}; unsure: ${e.unsure.why})`;
}

function isKeyAssignment(a: ConfigAssignment): a is Extract<ConfigAssignment, { path: unknown }> {
  return 'path' in a;
}
