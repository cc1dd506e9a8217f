// Reads any config we recognise for an estimate: our run config, a DeepSpeed config, or an
// accelerate config (recognised as the language server does, by name then content, unless the
// caller says which), with the settings of its `fsdp-studio:` comment merged under the caller's options.
import { yamlVersionOf } from '../../config/config-analysis';
import { recogniseConfig } from '../../config/document-kind';
import { parseSourceDocument, sourceKindOf } from '../../config/source-document';
import { UnreadDocument } from '../../config/unread-document';
import type { ConfigInputResult, ConfigKind } from './config-input';
import { findOptionComment, mergeOptions, type EstimateOptions } from './estimate-options';
import { accelerateInput } from './from-accelerate';
import { deepspeedInput } from './from-deepspeed';
import { hfTrainingInput } from './from-hf-training';
import { torchtitanInput } from './from-torchtitan';
import { runConfigInput } from './from-run-config';
import type { ModelSource } from './model-from-options';

/**
 * `source` finds models beyond the presets (Hugging Face folders and cache, models named beside the
 * config); callers that can read files pass one (inputs/hf-model.ts), the webview does not.
 */
export function readConfigForEstimate(
  text: string,
  fileName: string,
  options: EstimateOptions = {},
  kind: ConfigKind | undefined = recogniseConfig(fileName, text),
  source?: ModelSource,
): ConfigInputResult {
  const comment = findOptionComment(text);
  const doc = parseSourceDocument(text, sourceKindOf(fileName), kind ? { yamlVersion: yamlVersionOf(kind) } : {});
  if (comment?.problems.length) {
    const pos = doc.positionAt(comment.offset);
    return {
      error: `${fileName}:${pos.line + 1}:${pos.character + 1} fsdp-studio comment: ${comment.problems.map((p) => p.message).join('; ')}`,
      range: { start: pos, end: pos },
    };
  }
  if (doc instanceof UnreadDocument) {
    // Too large or too deeply nested to read (config/unread-document.ts): no estimate from defaults.
    const { range, message } = doc.syntaxErrors[0];
    return { error: `${fileName}:${range.start.line + 1}:${range.start.character + 1} ${message}`, range };
  }
  const merged = mergeOptions(comment?.options, options);
  // A model the comment names but nothing provides is a problem of the comment.
  const atComment = (r: ConfigInputResult): ConfigInputResult => {
    if (!('error' in r) || r.range || !comment?.options.model || !/model "/.test(r.error)) return r;
    const pos = doc.positionAt(comment.offset);
    return { ...r, range: { start: pos, end: pos } };
  };
  switch (kind) {
    case 'run-config':
      return runConfigInput(text, fileName, merged, doc);
    case 'deepspeed':
      return atComment(deepspeedInput(doc, fileName, merged, source));
    case 'accelerate':
      return atComment(accelerateInput(doc, fileName, merged, source));
    case 'torchtitan':
      return atComment(torchtitanInput(doc, fileName, merged, source));
    case 'hf-training':
      return atComment(hfTrainingInput(doc, fileName, merged, source));
    default: {
      const why = doc.syntaxErrors.length
        ? `cannot be parsed (${doc.syntaxErrors[0].message})`
        : 'is not a run config (model, data, training), a DeepSpeed, accelerate, torchtitan or TrainingArguments config';
      return { error: `${fileName} ${why}` };
    }
  }
}
