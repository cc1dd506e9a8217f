// What reading a config for an estimate gives: the input, where the config sets each knob (for
// "apply" and to place the inline hint), and how to write a change back.
import type { ConfigKind } from '../../config/document-kind';
import type { ConfigPath, SourceDocument, SourceRange } from '../../config/source-document';
import type { MemoryChange } from '../memory-change';
import type { MemoryInput } from '../memory-input';
import type { ModelOrigin } from './model-from-options';

export type { ConfigKind };

/**
 * One thing to write to make a change: a key of the config (`value` undefined removes it), or a
 * setting of the config's `fsdp-studio:` comment, for what the config's own tool does not record
 * (the model, the GPU, checkpointing done in model code).
 */
export type ConfigAssignment = { path: ConfigPath; value: unknown } | { option: string; value: string | number };

export interface ConfigMemoryInput {
  kind: ConfigKind;
  doc: SourceDocument;
  input: MemoryInput;
  /** Where the inline hint goes: the line of the section that decides most of the memory. */
  anchor: SourceRange;
  /** Where a "does not fit" problem points: the micro-batch, if the config has it. */
  fitAnchor: SourceRange;
  /** Assumptions made for what the config does not say. */
  notes: string[];
  /** Which model the estimate is for, and where it came from. */
  model?: ModelOrigin;
  /** The keys to set for a change, or why this config cannot express it. */
  assignmentsFor(change: MemoryChange): ConfigAssignment[] | string;
}

export interface ConfigInputError {
  kind?: ConfigKind;
  /** "file.yaml:14:3 training.batch_size_per_gpu: must be ≥ 1" */
  error: string;
  range?: SourceRange;
}

export type ConfigInputResult = ConfigMemoryInput | ConfigInputError;

export function isConfigInputError(r: ConfigInputResult): r is ConfigInputError {
  return 'error' in r;
}

/** `file:line:column path: message`, the project's form for a problem in a config (as formatProblem). */
export function locate(fileName: string, doc: SourceDocument, path: ConfigPath, message: string): ConfigInputError {
  const range = doc.rangeOf(path);
  const where = `${fileName}:${range.start.line + 1}:${range.start.character + 1}`;
  return { error: path.length ? `${where} ${path.join('.')}: ${message}` : `${where} ${message}`, range };
}
