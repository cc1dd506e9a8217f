// `model: { from_hf: DIR }` (or `fsdp-train --from-hf DIR`): the run config's model section taken
// from a Hugging Face folder's config.json (./hf-model-folder.ts), before the schema and the checker
// see it, so every reader of a run config — the CLI's resolved config.json for the runtime, the
// editor's diagnostics and its memory estimate — sees the same model keys, and only this file reads
// the folder. Keys the file writes beside from_hf win over the folder's (max_seq_len for a shorter
// context, init_std); the weights' import holds the result to the folder's tensors.
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { readHfModelFolder } from './hf-model-folder';
import type { ConfigProblem } from './schema-problems';
import type { SourceDocument } from './source-document';

export interface HfModelExpansion {
  /** The run config with the folder's model keys filled in (the input itself when there is no from_hf). */
  value: unknown;
  /** Why the folder gives no model, as a problem at model.from_hf. */
  problem?: ConfigProblem;
  /** The folder's config.json read, when one was. */
  configFile?: string;
  /** Keys written beside from_hf that say another model than the folder's, each at its key. */
  warnings?: ConfigProblem[];
}

/**
 * Fills the model keys of `value`'s `model.from_hf` folder (relative to `fileName`'s folder), after
 * setting from_hf to `fromHf` (the command line's --from-hf, absolute) when given. Never throws.
 */
export function expandHfModel(
  input: unknown,
  fileName: string,
  doc: SourceDocument,
  fromHf?: string,
): HfModelExpansion {
  if (!isObject(input)) return { value: input };
  const written = isObject(input.model) ? input.model : undefined;
  const model = fromHf !== undefined ? { ...written, from_hf: fromHf } : written;
  const value = model === written ? input : { ...input, model };
  const dir = model?.from_hf;
  if (typeof dir !== 'string' || dir === '') return { value };
  const folder = hfFolderOf(dir, fileName);
  const read = readHfModelFolder(folder);
  if ('error' in read) {
    const at = ['model', 'from_hf'];
    return {
      value,
      problem: {
        severity: 'error',
        path: at,
        code: 'model.from-hf',
        message: `from_hf: ${read.error}`,
        range: doc.rangeOf(at, 'key'),
      },
    };
  }
  return {
    value: { ...value, model: { ...read.model, ...model } },
    configFile: read.configFile,
    warnings: differences(model!, read.model, read.configFile, doc),
  };
}

/**
 * Keys written beside from_hf whose values are not the folder's. They win, as the file says, but the
 * weights were trained with the folder's (the import holds only the tensors' shapes to the keys):
 * a rope_theta or an rms_norm_eps changed silently is a different model. A shorter max_seq_len is
 * only a shorter context, and not said.
 */
function differences(
  written: Record<string, unknown>,
  folder: Record<string, unknown>,
  configFile: string,
  doc: SourceDocument,
): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const [key, value] of Object.entries(written)) {
    const theirs = folder[key];
    if (key === 'from_hf' || theirs === undefined || isDeepStrictEqual(value, theirs)) continue;
    if (key === 'max_seq_len' && typeof value === 'number' && value <= (theirs as number)) continue;
    const at = ['model', key];
    if (!doc.has(at)) continue; // a --set override: said where it is set
    out.push({
      severity: 'warning',
      path: at,
      code: 'model.from-hf-differs',
      message: `${key} ${JSON.stringify(value)} is not the folder's ${JSON.stringify(theirs)} (${configFile}): its weights were trained with the folder's`,
      range: doc.rangeOf(at, 'key'),
    });
  }
  return out;
}

/** The folder `from_hf` names: relative to the run config's own folder, as data paths are. */
export function hfFolderOf(fromHf: string, fileName: string): string {
  return path.resolve(path.dirname(path.resolve(fileName)), fromHf);
}

/**
 * The schema's problems that only say the model section lacks keys the folder would have given
 * (its own problem, at from_hf, says why it did not): "missing required key d_model" adds nothing.
 */
export function isMissingModelKey(p: ConfigProblem): boolean {
  return p.code === 'schema.required' && p.path.length === 1 && p.path[0] === 'model';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
