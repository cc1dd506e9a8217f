// Test texts mark the exact range a diagnostic must have with ⟪ and ⟫, so a case reads as the
// config a person would write with the expected squiggle drawn in.
import type { Range } from 'vscode-languageserver-protocol';

export function parseMarked(marked: string): { text: string; ranges: Range[] } {
  let text = '';
  const ranges: Range[] = [];
  let line = 0;
  let character = 0;
  let open: { line: number; character: number } | undefined;
  for (const ch of marked) {
    if (ch === '⟪') {
      open = { line, character };
    } else if (ch === '⟫') {
      if (!open) throw new Error(`⟫ without ⟪ in: ${marked}`);
      ranges.push({ start: open, end: { line, character } });
      open = undefined;
    } else {
      text += ch;
      if (ch === '\n') {
        line++;
        character = 0;
      } else {
        character += ch.length;
      }
    }
  }
  return { text, ranges };
}

/** Applies LSP text edits (non-overlapping, against the same text) and returns the new text. */
export function applyTextEdits(text: string, edits: Array<{ range: Range; newText: string }>): string {
  const offsetOf = (pos: { line: number; character: number }) => {
    let offset = 0;
    for (let l = 0; l < pos.line; l++) offset = text.indexOf('\n', offset) + 1;
    return offset + pos.character;
  };
  const sorted = [...edits].sort((a, b) => offsetOf(b.range.start) - offsetOf(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, offsetOf(e.range.start)) + e.newText + out.slice(offsetOf(e.range.end));
  return out;
}
