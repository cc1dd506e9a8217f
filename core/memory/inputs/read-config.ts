// Reads any config we recognise for an estimate: our run config, a DeepSpeed config, or an
// accelerate config, told apart by content (file names vary too much to rely on), with the
// settings of its `fsdp-studio:` comment merged under the caller's options.
import { parseSourceDocument, sourceKindOf } from '../../config/source-document';
import type { ConfigInputResult, ConfigKind } from './config-input';
import { findOptionComment, mergeOptions, type EstimateOptions } from './estimate-options';
import { accelerateInput } from './from-accelerate';
import { deepspeedInput } from './from-deepspeed';
import { runConfigInput } from './from-run-config';

const DEEPSPEED_KEYS = ['zero_optimization', 'train_batch_size', 'train_micro_batch_size_per_gpu', 'fp16', 'bf16', 'gradient_accumulation_steps', 'optimizer'];
const ACCELERATE_KEYS = ['distributed_type', 'compute_environment', 'num_processes', 'mixed_precision', 'fsdp_config', 'deepspeed_config'];

/** Which kind of config a parsed value is, or undefined for none we estimate. */
export function configKindOf(value: unknown): ConfigKind | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (['model', 'data', 'training'].every((k) => keys.includes(k))) return 'run-config';
  if (keys.includes('distributed_type') || keys.includes('compute_environment') || keys.includes('fsdp_config')) return 'accelerate';
  if (keys.includes('zero_optimization') || keys.includes('train_micro_batch_size_per_gpu') || keys.includes('train_batch_size')) return 'deepspeed';
  // Weaker evidence: mostly keys of one tool.
  const ds = keys.filter((k) => DEEPSPEED_KEYS.includes(k)).length;
  const acc = keys.filter((k) => ACCELERATE_KEYS.includes(k)).length;
  if (ds >= 2 && ds > acc) return 'deepspeed';
  if (acc >= 2) return 'accelerate';
  return undefined;
}

export function readConfigForEstimate(text: string, fileName: string, options: EstimateOptions = {}): ConfigInputResult {
  const comment = findOptionComment(text);
  const doc = parseSourceDocument(text, sourceKindOf(fileName));
  if (comment?.problems.length) {
    const pos = doc.positionAt(comment.offset);
    return { error: `${fileName}:${pos.line + 1}:${pos.character + 1} fsdp-studio comment: ${comment.problems.map((p) => p.message).join('; ')}`, range: { start: pos, end: pos } };
  }
  const merged = mergeOptions(comment?.options, options);
  const kind = configKindOf(doc.value);
  switch (kind) {
    case 'run-config':
      return runConfigInput(text, fileName, merged);
    case 'deepspeed':
      return deepspeedInput(doc, fileName, merged);
    case 'accelerate':
      return accelerateInput(doc, fileName, merged);
    default: {
      const why = doc.syntaxErrors.length ? `cannot be parsed (${doc.syntaxErrors[0].message})` : 'is not a run config (model, data, training), a DeepSpeed config or an accelerate config';
      return { error: `${fileName} ${why}` };
    }
  }
}
