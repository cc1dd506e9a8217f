// JSON with comments and trailing commas (what DeepSpeed's hjson reader accepts of JSON), parsed
// with jsonc-parser so every key and value keeps its offsets.
import * as jsonc from 'jsonc-parser';
import type { ConfigPath, CursorLocation, SourceDocument, SourceRange, SyntaxProblem } from './source-document';
import { TextPositions } from './text-positions';

export class JsonSourceDocument extends TextPositions implements SourceDocument {
  readonly kind = 'json' as const;
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[] = [];
  private readonly root: jsonc.Node | undefined;

  constructor(text: string) {
    super(text);
    const errors: jsonc.ParseError[] = [];
    this.root = jsonc.parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
    for (const err of errors) {
      this.syntaxErrors.push({
        message: jsonc.printParseErrorCode(err.error),
        range: this.range(err.offset, err.offset + err.length),
      });
    }
    if (this.root) this.reportDuplicateKeys(this.root);
    this.value = this.root ? jsonc.getNodeValue(this.root) : undefined;
  }

  has(path: ConfigPath): boolean {
    return !!this.node(path);
  }

  rangeOf(path: ConfigPath, part: 'key' | 'value' = 'value'): SourceRange {
    if (!this.root) return this.range(0, 0);
    for (let depth = path.length; depth >= 0; depth--) {
      const node = this.node(path.slice(0, depth));
      if (!node) continue;
      const wantKey = part === 'key' || depth < path.length;
      const keyNode = node.parent?.type === 'property' ? node.parent.children?.[0] : undefined;
      const target = wantKey && keyNode ? keyNode : node;
      return this.range(target.offset, target.offset + target.length);
    }
    return this.range(0, 0);
  }

  valueSpan(path: ConfigPath): { start: number; end: number } | undefined {
    const node = this.node(path);
    return node ? { start: node.offset, end: node.offset + node.length } : undefined;
  }

  locate(offset: number): CursorLocation {
    const location = jsonc.getLocation(this.text, offset);
    const path = location.path as (string | number)[];
    // Inside a key's quotes the word excludes them, so a completed key keeps its quotes.
    if (location.isAtPropertyKey) return { path: path.slice(0, -1), part: 'key', word: this.wordAt(offset) };
    const prev = location.previousNode;
    if (prev && ['string', 'number', 'boolean', 'null'].includes(prev.type)) {
      // A value's word is the whole JSON token, quotes included: completions insert JSON.
      return {
        path,
        part: 'value',
        word: {
          text: this.text.slice(prev.offset, prev.offset + prev.length),
          start: prev.offset,
          end: prev.offset + prev.length,
        },
      };
    }
    return { path, part: 'value', word: this.wordAt(offset) };
  }

  /**
   * The node at `path`, as jsonc.findNodeAtLocation finds it (the first property of a name) but
   * through a per-object index: that function scans an object's properties on every lookup, which
   * made a problem per key of a 100k-key config quadratic.
   */
  private node(path: ConfigPath): jsonc.Node | undefined {
    let node = this.root;
    for (const segment of path) {
      if (!node) return undefined;
      if (typeof segment === 'string') {
        if (node.type !== 'object') return undefined;
        node = this.propertiesOf(node).get(segment);
      } else {
        if (node.type !== 'array' || segment < 0 || segment >= (node.children?.length ?? 0)) return undefined;
        node = node.children![segment];
      }
    }
    return node;
  }

  private readonly propertyIndex = new WeakMap<jsonc.Node, Map<string, jsonc.Node>>();

  private propertiesOf(object: jsonc.Node): Map<string, jsonc.Node> {
    let index = this.propertyIndex.get(object);
    if (!index) {
      index = new Map();
      for (const prop of object.children ?? []) {
        const [key, value] = prop.children ?? [];
        if (prop.children?.length === 2 && typeof key.value === 'string' && !index.has(key.value))
          index.set(key.value, value);
      }
      this.propertyIndex.set(object, index);
    }
    return index;
  }

  // DeepSpeed loads JSON with a hook that raises on duplicate keys, and YAML refuses them; a plain
  // JSON reader keeps only the last, so the first would be silently ignored.
  private reportDuplicateKeys(node: jsonc.Node): void {
    if (node.type === 'object') {
      const seen = new Set<string>();
      for (const prop of node.children ?? []) {
        const key = prop.children?.[0];
        if (!key) continue;
        const name = String(key.value);
        if (seen.has(name))
          this.syntaxErrors.push({
            message: `duplicate key "${name}": DeepSpeed rejects it and JSON readers keep only the last`,
            range: this.range(key.offset, key.offset + key.length),
          });
        seen.add(name);
      }
    }
    for (const child of node.children ?? []) this.reportDuplicateKeys(child);
  }
}
