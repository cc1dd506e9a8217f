// A config file parsed with source positions, YAML or JSON-with-comments alike, so every problem
// found in the value can point at the exact key or value in the text.
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode, type Pair } from 'yaml';
import * as jsonc from 'jsonc-parser';

export type ConfigPath = ReadonlyArray<string | number>;

export interface SourcePosition {
  /** 0-based line. */
  line: number;
  /** 0-based column, in UTF-16 code units (as LSP counts). */
  character: number;
}

export interface SourceRange {
  start: SourcePosition;
  end: SourcePosition;
}

export interface SyntaxProblem {
  message: string;
  range: SourceRange;
}

export interface SourceDocument {
  readonly kind: 'yaml' | 'json';
  readonly text: string;
  /** The parsed value; undefined when the text is empty or unparseable at the top. */
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[];
  /** Range of the key (`part: 'key'`) or the value at `path`; the nearest existing ancestor if absent. */
  rangeOf(path: ConfigPath, part?: 'key' | 'value'): SourceRange;
  /** Whether `path` exists in the document. */
  has(path: ConfigPath): boolean;
  positionAt(offset: number): SourcePosition;
  offsetAt(position: SourcePosition): number;
}

export function parseSourceDocument(text: string, kind: 'yaml' | 'json'): SourceDocument {
  return kind === 'yaml' ? new YamlSourceDocument(text) : new JsonSourceDocument(text);
}

/** Chooses the parser by file name: .json/.jsonc/.hjson are JSON with comments, the rest YAML. */
export function sourceKindOf(fileName: string): 'yaml' | 'json' {
  return /\.(json|jsonc|hjson)$/i.test(fileName) ? 'json' : 'yaml';
}

abstract class TextPositions {
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

  private starts(): number[] {
    if (!this.lineStarts) {
      const starts = [0];
      for (let i = 0; i < this.text.length; i++) if (this.text.charCodeAt(i) === 10) starts.push(i + 1);
      this.lineStarts = starts;
    }
    return this.lineStarts;
  }
}

class YamlSourceDocument extends TextPositions implements SourceDocument {
  readonly kind = 'yaml' as const;
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[] = [];
  private readonly contents: YamlNode | null;

  constructor(text: string) {
    super(text);
    const doc = parseDocument(text, { lineCounter: new LineCounter(), prettyErrors: false, uniqueKeys: true });
    for (const err of doc.errors) {
      this.syntaxErrors.push({ message: err.message.split('\n')[0], range: this.range(err.pos[0], err.pos[1]) });
    }
    this.contents = (doc.contents as YamlNode | null) ?? null;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      this.syntaxErrors.push({ message: (e as Error).message, range: this.range(0, 0) });
    }
    this.value = value ?? undefined;
  }

  has(path: ConfigPath): boolean {
    return this.find(path).depth === path.length;
  }

  rangeOf(path: ConfigPath, part: 'key' | 'value' = 'value'): SourceRange {
    const found = this.find(path);
    if (found.depth === path.length && part === 'key' && found.pair && isScalar(found.pair.key) && found.pair.key.range) {
      const [s, e] = found.pair.key.range;
      return this.range(s, e);
    }
    if (found.depth < path.length && found.pair && isScalar(found.pair.key) && found.pair.key.range) {
      // Missing child: point at the parent's key, where the user would add it.
      const [s, e] = found.pair.key.range;
      return this.range(s, e);
    }
    const r = found.node?.range;
    if (!r) return this.range(0, 0);
    return this.range(r[0], r[1]);
  }

  private find(path: ConfigPath): { node: YamlNode | null; pair: Pair | undefined; depth: number } {
    let node: YamlNode | null = this.contents;
    let pair: Pair | undefined;
    let depth = 0;
    for (const segment of path) {
      let next: YamlNode | null | undefined;
      if (isMap(node)) {
        const item = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
        if (!item) break;
        pair = item as Pair;
        next = (item.value as YamlNode | null) ?? null;
        if (next === null) {
          depth++;
          node = null;
          break;
        }
      } else if (isSeq(node) && typeof segment === 'number') {
        next = node.items[segment] as YamlNode | undefined;
        if (!next) break;
        pair = undefined;
      } else {
        break;
      }
      node = next;
      depth++;
    }
    if (node === null && pair && depth === path.length) {
      // `key:` with no value: point at the key.
      return { node: pair.key as YamlNode, pair, depth };
    }
    return { node, pair, depth };
  }
}

class JsonSourceDocument extends TextPositions implements SourceDocument {
  readonly kind = 'json' as const;
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[] = [];
  private readonly root: jsonc.Node | undefined;

  constructor(text: string) {
    super(text);
    const errors: jsonc.ParseError[] = [];
    this.root = jsonc.parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
    for (const err of errors) {
      this.syntaxErrors.push({ message: jsonc.printParseErrorCode(err.error), range: this.range(err.offset, err.offset + err.length) });
    }
    this.value = this.root ? jsonc.getNodeValue(this.root) : undefined;
  }

  has(path: ConfigPath): boolean {
    return !!this.root && !!jsonc.findNodeAtLocation(this.root, path as jsonc.JSONPath);
  }

  rangeOf(path: ConfigPath, part: 'key' | 'value' = 'value'): SourceRange {
    if (!this.root) return this.range(0, 0);
    for (let depth = path.length; depth >= 0; depth--) {
      const node = jsonc.findNodeAtLocation(this.root, path.slice(0, depth) as jsonc.JSONPath);
      if (!node) continue;
      const wantKey = part === 'key' || depth < path.length;
      const keyNode = node.parent?.type === 'property' ? node.parent.children?.[0] : undefined;
      const target = wantKey && keyNode ? keyNode : node;
      return this.range(target.offset, target.offset + target.length);
    }
    return this.range(0, 0);
  }
}
