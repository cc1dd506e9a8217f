// "Apply": writes a memory change back into the config it was estimated from, as one text edit
// at the exact range that changes (the rest of the file stays as it was).
import { diffEdit, setConfigValue, type TextEdit } from '../config/config-edits';
import { parseSourceDocument, sourceKindOf } from '../config/source-document';
import type { MemoryChange } from './memory-change';
import { isConfigInputError } from './inputs/config-input';
import { setOptionInText, type EstimateOptions } from './inputs/estimate-options';
import { readConfigForEstimate } from './inputs/read-config';

export function changeEdit(
  text: string,
  fileName: string,
  change: MemoryChange,
  options: EstimateOptions = {},
): { edit?: TextEdit; text: string } | { error: string } {
  const read = readConfigForEstimate(text, fileName, options);
  if (isConfigInputError(read)) return { error: read.error };
  const assignments = read.assignmentsFor(change);
  if (typeof assignments === 'string') return { error: assignments };
  let after = text;
  for (const a of assignments) {
    if ('option' in a) {
      after = setOptionInText(after, sourceKindOf(fileName), a.option, a.value);
      continue;
    }
    const next = setConfigValue(after, fileName, a.path, a.value);
    if (typeof next !== 'string') return { error: `${fileName} ${a.path.join('.')}: ${next.error}` };
    after = next;
  }
  const doc = parseSourceDocument(text, sourceKindOf(fileName));
  const edit = diffEdit(text, after, (o) => doc.positionAt(o));
  return edit ? { edit, text: after } : { text: after };
}
