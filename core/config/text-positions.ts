// Line/column arithmetic shared by the YAML and JSON documents: LSP positions count UTF-16 code
// units per line, which is what JavaScript string offsets are.
import type { SourcePosition, SourceRange } from './source-document';

export abstract class TextPositions {
  private lineStarts: number[] | undefined;
  constructor(readonly text: string) {}

  positionAt(offset: number): SourcePosition {
    const starts = this.starts();
    const clamped = Math.max(0, Math.min(offset, this.text.length));
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= clamped) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, character: clamped - starts[lo] };
  }

  offsetAt(position: SourcePosition): number {
    const starts = this.starts();
    if (position.line >= starts.length) return this.text.length;
    const lineStart = starts[Math.max(0, position.line)];
    const nextStart = position.line + 1 < starts.length ? starts[position.line + 1] : this.text.length;
    return Math.min(lineStart + Math.max(0, position.character), nextStart);
  }

  protected range(start: number, end: number): SourceRange {
    return { start: this.positionAt(start), end: this.positionAt(end) };
  }

  /** The identifier-like word around `offset` (keys and enum values: letters, digits, _ . -). */
  protected wordAt(offset: number): { text: string; start: number; end: number } {
    let start = offset;
    let end = offset;
    while (start > 0 && /[\w.-]/.test(this.text[start - 1])) start--;
    while (end < this.text.length && /[\w.-]/.test(this.text[end])) end++;
    return { text: this.text.slice(start, end), start, end };
  }

  private starts(): number[] {
    if (!this.lineStarts) {
      const starts = [0];
      for (let i = 0; i < this.text.length; i++) if (this.text.charCodeAt(i) === 10) starts.push(i + 1);
      this.lineStarts = starts;
    }
    return this.lineStarts;
  }
}
