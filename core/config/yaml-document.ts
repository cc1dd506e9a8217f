// YAML parsed with the `yaml` package's CST-backed document, so every key and value keeps its
// offsets. Block-style YAML being typed is often not yet valid, so locating the cursor falls back
// to reading indentation when the parsed tree has no node there.
import { isMap, isPair, isScalar, isSeq, parseDocument, type Node as YamlNode, type Pair, type YAMLMap } from 'yaml';
import type { ConfigPath, CursorLocation, SourceDocument, SourceRange, SyntaxProblem } from './source-document';
import { TextPositions } from './text-positions';

interface Found {
  node: YamlNode | null;
  pair: Pair | undefined;
  depth: number;
}

export class YamlSourceDocument extends TextPositions implements SourceDocument {
  readonly kind = 'yaml' as const;
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[] = [];
  private readonly contents: YamlNode | null;

  constructor(text: string, version: '1.1' | '1.2') {
    super(text);
    // logLevel error: the yaml package would otherwise print warnings (e.g. about mapping keys) to stderr.
    // uniqueKeys false: the package compares each key with every earlier one of its mapping
    // (quadratic: minutes for 100k keys); duplicates are found below with one set per mapping.
    const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: false, version, logLevel: 'error' });
    for (const err of doc.errors)
      this.syntaxErrors.push({ message: err.message.split('\n')[0], range: this.range(err.pos[0], err.pos[1]) });
    this.contents = (doc.contents as YamlNode | null) ?? null;
    this.reportDuplicateKeys(version);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      this.syntaxErrors.push({ message: (e as Error).message, range: this.range(0, 0) });
    }
    this.value = value ?? undefined;
  }

  /** Each mapping's pairs by key (the first of duplicates, as lookups by key found it), built when first asked. */
  private readonly pairsByKey = new WeakMap<YAMLMap, Map<string, Pair>>();

  has(path: ConfigPath): boolean {
    return this.find(path).depth === path.length;
  }

  rangeOf(path: ConfigPath, part: 'key' | 'value' = 'value'): SourceRange {
    const found = this.find(path);
    const keyRange = found.pair && isScalar(found.pair.key) ? found.pair.key.range : undefined;
    // A missing child points at its parent's key, where the user would add it.
    if (keyRange && (found.depth < path.length || part === 'key')) return this.range(keyRange[0], keyRange[1]);
    const r = found.node?.range;
    if (!r) return this.range(0, 0);
    // A block collection's range runs to the start of the next line; the squiggle should not.
    let end = r[1];
    while (end > r[0] && /\s/.test(this.text[end - 1])) end--;
    return this.range(r[0], end);
  }

  valueSpan(path: ConfigPath): { start: number; end: number } | undefined {
    const found = this.find(path);
    const value = found.pair?.value as YamlNode | null | undefined;
    if (found.depth !== path.length || !value?.range || isEmptyScalar(value)) return undefined;
    return { start: value.range[0], end: value.range[1] };
  }

  locate(offset: number): CursorLocation {
    return this.locateInTree(this.contents, [], offset) ?? locateByIndentation(this.text, offset, this.wordAt(offset));
  }

  /** The key or scalar value of the parsed tree under `offset`, if any. */
  private locateInTree(node: YamlNode | null, path: (string | number)[], offset: number): CursorLocation | undefined {
    if (isMap(node)) {
      for (const item of node.items) {
        if (!isPair(item) || !isScalar(item.key) || !item.key.range) continue;
        const key = String(item.key.value);
        const [ks, ke] = item.key.range;
        if (offset >= ks && offset <= ke)
          return { path, part: 'key', word: { text: this.text.slice(ks, ke), start: ks, end: ke } };
        const value = item.value as YamlNode | null;
        if (
          isScalar(value) &&
          !isEmptyScalar(value) &&
          value.range &&
          offset >= value.range[0] &&
          offset <= value.range[1]
        ) {
          return {
            path: [...path, key],
            part: 'value',
            word: { text: this.text.slice(value.range[0], value.range[1]), start: value.range[0], end: value.range[1] },
          };
        }
        if (value?.range && offset >= value.range[0] && offset <= value.range[1]) {
          const inner = this.locateInTree(value, [...path, key], offset);
          if (inner) return inner;
        }
      }
    } else if (isSeq(node)) {
      for (let i = 0; i < node.items.length; i++) {
        const item = node.items[i] as YamlNode | null;
        if (item?.range && offset >= item.range[0] && offset <= item.range[1] && !isScalar(item))
          return this.locateInTree(item, [...path, i], offset);
      }
    }
    return undefined;
  }

  private pairOf(map: YAMLMap, key: string): Pair | undefined {
    let index = this.pairsByKey.get(map);
    if (!index) {
      index = new Map();
      for (const p of map.items)
        if (isPair(p) && isScalar(p.key) && !index.has(String(p.key.value))) index.set(String(p.key.value), p as Pair);
      this.pairsByKey.set(map, index);
    }
    return index.get(key);
  }

  /**
   * Keys given twice in one mapping (scalars of the same value, as the yaml package compares
   * them): an error for YAML 1.2 readers; a warning for YAML 1.1 ones (PyYAML, as accelerate reads
   * its config), which silently keep the last. Walks the tree with a stack, not recursion, so any
   * depth the parser accepted is fine here.
   */
  private reportDuplicateKeys(version: '1.1' | '1.2'): void {
    const stack: unknown[] = [this.contents];
    while (stack.length) {
      const node = stack.pop();
      if (isMap(node)) {
        const seen = new Set<unknown>();
        for (const item of node.items) {
          if (!isPair(item)) continue;
          const key = item.key;
          if (isScalar(key) && key.range) {
            if (seen.has(key.value)) {
              const range = this.range(key.range[0], key.range[1]);
              if (version === '1.1')
                this.syntaxErrors.push({
                  message: 'Map keys must be unique: PyYAML keeps only the last value',
                  range,
                  severity: 'warning',
                });
              else this.syntaxErrors.push({ message: 'Map keys must be unique', range });
            }
            seen.add(key.value);
          }
          stack.push(item.value);
        }
      } else if (isSeq(node)) {
        for (const item of node.items) stack.push(item);
      }
    }
  }

  private find(path: ConfigPath): Found {
    let node: YamlNode | null = this.contents;
    let pair: Pair | undefined;
    let depth = 0;
    for (const segment of path) {
      let next: YamlNode | null | undefined;
      if (isMap(node)) {
        const item = this.pairOf(node, String(segment));
        if (!item) break;
        pair = item as Pair;
        next = isEmptyScalar(item.value) ? null : ((item.value as YamlNode | null) ?? null);
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

/** `key:` with nothing after it parses as a null scalar with an empty source range. */
export function isEmptyScalar(node: unknown): boolean {
  return isScalar(node) && node.value === null && !!node.range && node.range[0] === node.range[1];
}

/**
 * Where the cursor is in block YAML that does not parse (yet) there, read from indentation: the
 * key being given a value on this line, or the mapping a key is being typed into.
 */
export function locateByIndentation(text: string, offset: number, word: CursorLocation['word']): CursorLocation {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  const before = text.slice(lineStart, offset);
  const keyValue = /^(\s*)(?:-\s+)?([\w.-]+)\s*:\s*[\w.-]*$/.exec(before);
  if (keyValue) {
    const indent = keyValue[1].length;
    return { path: [...parentPathAt(text, lineStart, indent), keyValue[2]], part: 'value', word };
  }
  const bare = /^(\s*)(?:-\s+)?[\w.-]*$/.exec(before);
  const indent = bare ? bare[1].length : 0;
  return { path: parentPathAt(text, lineStart, indent), part: 'key', word };
}

/**
 * The keys of the enclosing block mappings of a line indented by `indent`: scanning upwards, each
 * less indented `key:` line that opens a block is one level of the path.
 */
function parentPathAt(text: string, lineStart: number, indent: number): string[] {
  const path: string[] = [];
  let limit = indent;
  let end = lineStart - 1;
  while (end > 0 && limit > 0) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    const line = text.slice(start, end);
    end = start - 1;
    if (!line.trim() || /^\s*#/.test(line)) continue;
    const lineIndent = /^\s*/.exec(line)![0].length;
    if (lineIndent >= limit) continue;
    limit = lineIndent;
    const opener = /^\s*(?:-\s+)?([\w.-]+|"[^"]*"|'[^']*')\s*:\s*(?:#.*)?$/.exec(line);
    if (opener) path.unshift(opener[1].replace(/^["']|["']$/g, ''));
  }
  return path;
}
