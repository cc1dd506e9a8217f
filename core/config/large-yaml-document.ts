// Large YAML 1.2 documents (generated configs of tens of thousands of keys) parsed with js-yaml's
// event parser instead of the `yaml` package's CST: the CST's lexer was most of the time of every
// check of such a file (2 MB, 100k keys: about 2 s of 2.5 s; js-yaml's events and values: 0.3 s,
// bench/results/lsp-*.md). Events carry source offsets, from which this file builds the little
// tree that positions need: each mapping's keys with their ranges, each value's range.
//
// Only a document js-yaml reads cleanly takes this path: one document, no syntax error, no tag
// or alias beyond what the core schema resolves. Anything else returns undefined from
// `readLargeYaml` and is read by the `yaml` package as every smaller document is, so its
// problems read the same whatever the size. test/unit/large-yaml-document.test.ts holds both
// readers to the same values and ranges.
import {
  COLLECTION_STYLE,
  constructFromEvents,
  CORE_SCHEMA,
  EVENT_ID,
  getScalarValue,
  parseEvents,
  SCALAR_STYLE,
  YAML11_SCHEMA,
  type Event,
  type ScalarEvent,
} from 'js-yaml';
import type { ConfigPath, CursorLocation, SourceDocument, SourceRange, SyntaxProblem } from './source-document';
import { MAX_NESTING } from './unread-document';
import { locateByIndentation } from './yaml-document';
import { TextPositions } from './text-positions';

/** A node of the document with its source offsets (end exclusive). */
type PositionedNode =
  | { kind: 'scalar'; start: number; end: number; empty: boolean }
  | { kind: 'alias'; start: number; end: number }
  | { kind: 'seq'; start: number; end: number; items: PositionedNode[] }
  | { kind: 'map'; start: number; end: number; pairs: Pair[]; byKey?: Map<string, Pair> };

interface Pair {
  /** The key as the value's object has it; undefined for a key that is a collection. */
  key: string | undefined;
  keyStart: number;
  keyEnd: number;
  value: PositionedNode;
}

/**
 * The document, or undefined when js-yaml cannot read it cleanly (the `yaml` package then reads it).
 * YAML 1.1 (accelerate's configs, read by PyYAML) is resolved with js-yaml's YAML 1.1 schema, so an
 * unquoted `no` is false in both readers; the 1.1 forms where the two could still differ
 * (merge keys, timestamps, sexagesimal and base-2/8 numbers) send the document back.
 */
export function readLargeYaml(text: string, version: '1.1' | '1.2' = '1.2'): LargeYamlDocument | undefined {
  const schema = version === '1.1' ? YAML11_SCHEMA : CORE_SCHEMA;
  const tree = new TreeBuilder(text, schema, version);
  let events: Event[];
  let values: unknown[];
  try {
    // The nesting limit was checked before (unread-document.ts); js-yaml's own default is lower.
    events = parseEvents(text, { maxDepth: MAX_NESTING + 1 });
    // json: duplicate keys keep the last value, as the `yaml` package's toJS does (they are reported below).
    values = constructFromEvents(events, { source: text, schema, json: true, maxAliases: 100 });
  } catch {
    return undefined;
  }
  if (values.length > 1) return undefined;
  for (const e of events) {
    // Directives (%YAML 1.1), tags and aliases: rare in configs, and where the two readers could differ.
    if (e.type === EVENT_ID.ALIAS || (e.type === EVENT_ID.DOCUMENT && e.directives.length > 0)) return undefined;
    if ((e.type === EVENT_ID.SCALAR || e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE) && e.tagStart >= 0)
      return undefined;
    // Block scalars (| and >): js-yaml's offsets are their content's, the yaml package's start at the indicator.
    if (e.type === EVENT_ID.SCALAR && (e.style === SCALAR_STYLE.LITERAL_BLOCK || e.style === SCALAR_STYLE.FOLDED_BLOCK))
      return undefined;
    if (
      version === '1.1' &&
      e.type === EVENT_ID.SCALAR &&
      e.style === SCALAR_STYLE.PLAIN &&
      YAML11_AMBIGUOUS.test(text[e.valueStart] ?? '')
    ) {
      if (YAML11_UNSURE.test(getScalarValue(text, e))) return undefined;
    }
  }
  if (commentEndsBlock(text)) return undefined;
  const root = tree.build(events);
  if (tree.unsupported) return undefined;
  return new LargeYamlDocument(text, root, values[0], version);
}

/**
 * Whether an indented comment line is the last thing in a block collection (the next content line
 * is less indented, or there is none): the `yaml` package then runs the enclosing collection's range
 * over the comment lines after it, by rules of its lexer this tree does not copy (e.g. accelerate's
 * fp8 template, which ends with `  #opt_level: O1`). Such documents are read by the `yaml` package.
 */
function commentEndsBlock(text: string): boolean {
  // From the end, so each line is looked at once: `next` is the indentation of the next content line.
  let next = -1;
  let end = text.length;
  while (end > 0) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    const line = text.slice(start, end);
    const m = /^( *)(\S)/.exec(line);
    if (m) {
      const indent = m[1].length;
      if (m[2] !== '#') next = indent;
      else if (indent > 0 && indent > next) return true;
    }
    end = start - 1;
  }
  return false;
}

/** First characters of the plain scalars checked against YAML11_UNSURE (most keys and values start otherwise). */
const YAML11_AMBIGUOUS = /[-+.0-9<]/;
/**
 * YAML 1.1 plain scalars whose reading is not settled between js-yaml and the `yaml` package (or
 * PyYAML): the merge key, timestamps, sexagesimal numbers, base-2 and base-8 integers, numbers
 * with underscores, and exponents (PyYAML reads `1e3` as a string, the `yaml` package as 1000).
 * Rare in generated configs; such a document is read by the `yaml` package.
 */
const YAML11_UNSURE =
  /^<<$|^\d{4}-\d\d?-\d\d?|^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$|^[-+]?0b|^[-+]?0[0-7_]+$|^[-+]?[0-9.]*_|^[-+]?[0-9.]+[eE]/;

export class LargeYamlDocument extends TextPositions implements SourceDocument {
  readonly kind = 'yaml' as const;
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[] = [];
  private readonly root: PositionedNode | undefined;

  constructor(
    text: string,
    root: PositionedNode | undefined,
    value: unknown,
    private readonly version: '1.1' | '1.2' = '1.2',
  ) {
    super(text);
    this.root = root;
    this.value = value ?? undefined;
    this.reportDuplicateKeys();
  }

  has(path: ConfigPath): boolean {
    return this.find(path).depth === path.length;
  }

  rangeOf(path: ConfigPath, part: 'key' | 'value' = 'value'): SourceRange {
    const found = this.find(path);
    if (found.pair && (found.depth < path.length || part === 'key' || found.node === undefined))
      return this.range(found.pair.keyStart, found.pair.keyEnd);
    if (!found.node) return this.range(0, 0);
    // A block collection's range runs to the start of the next line; the squiggle should not.
    let end = found.node.end;
    while (end > found.node.start && /\s/.test(this.text[end - 1])) end--;
    return this.range(found.node.start, end);
  }

  /** The span of the value of a key (not of the document or of a sequence's item: the edits replace values of keys). */
  valueSpan(path: ConfigPath): { start: number; end: number } | undefined {
    const found = this.find(path);
    if (found.depth !== path.length || !found.node || !found.pair || found.pair.value !== found.node) return undefined;
    return { start: found.node.start, end: found.node.end };
  }

  locate(offset: number): CursorLocation {
    return this.locateInTree(this.root, [], offset) ?? locateByIndentation(this.text, offset, this.wordAt(offset));
  }

  private locateInTree(
    node: PositionedNode | undefined,
    path: (string | number)[],
    offset: number,
  ): CursorLocation | undefined {
    if (node?.kind === 'map') {
      for (const p of node.pairs) {
        if (p.key === undefined) continue;
        if (offset >= p.keyStart && offset <= p.keyEnd)
          return {
            path,
            part: 'key',
            word: { text: this.text.slice(p.keyStart, p.keyEnd), start: p.keyStart, end: p.keyEnd },
          };
        const v = p.value;
        if (v.kind === 'scalar' && !v.empty && offset >= v.start && offset <= v.end) {
          return {
            path: [...path, p.key],
            part: 'value',
            word: { text: this.text.slice(v.start, v.end), start: v.start, end: v.end },
          };
        }
        if ((v.kind === 'map' || v.kind === 'seq') && offset >= v.start && offset <= v.end) {
          const inner = this.locateInTree(v, [...path, p.key], offset);
          if (inner) return inner;
        }
      }
    } else if (node?.kind === 'seq') {
      for (let i = 0; i < node.items.length; i++) {
        const item = node.items[i];
        if (item.kind !== 'scalar' && offset >= item.start && offset <= item.end)
          return this.locateInTree(item, [...path, i], offset);
      }
    }
    return undefined;
  }

  /** The node at `path` (undefined for `key:` with no value), the pair it is the value of, and how deep the path exists. */
  private find(path: ConfigPath): { node: PositionedNode | undefined; pair: Pair | undefined; depth: number } {
    let node = this.root;
    let pair: Pair | undefined;
    let depth = 0;
    for (const segment of path) {
      if (node?.kind === 'map') {
        const p = pairOf(node, String(segment));
        if (!p) break;
        pair = p;
        node = p.value.kind === 'scalar' && p.value.empty ? undefined : p.value;
        depth++;
        if (!node) break;
      } else if (node?.kind === 'seq' && typeof segment === 'number' && node.items[segment]) {
        pair = undefined;
        node = node.items[segment];
        depth++;
      } else {
        break;
      }
    }
    return { node, pair, depth };
  }

  /**
   * Keys given twice in one mapping: an error for YAML 1.2 readers, a warning for YAML 1.1 ones
   * (PyYAML keeps the last), as yaml-document.ts reports them. Indexes each mapping's pairs by key on the way (the first of duplicates, as lookups find it).
   */
  private reportDuplicateKeys(): void {
    const stack: Array<PositionedNode | undefined> = [this.root];
    while (stack.length) {
      const node = stack.pop();
      if (node?.kind === 'map') {
        const byKey = new Map<string, Pair>();
        for (const p of node.pairs) {
          if (p.key !== undefined) {
            if (!byKey.has(p.key)) byKey.set(p.key, p);
            else if (this.version === '1.1')
              this.syntaxErrors.push({
                message: 'Map keys must be unique: PyYAML keeps only the last value',
                range: this.range(p.keyStart, p.keyEnd),
                severity: 'warning',
              });
            else
              this.syntaxErrors.push({ message: 'Map keys must be unique', range: this.range(p.keyStart, p.keyEnd) });
          }
          stack.push(p.value);
        }
        node.byKey = byKey;
      } else if (node?.kind === 'seq') {
        for (const item of node.items) stack.push(item);
      }
    }
  }
}

function pairOf(map: Extract<PositionedNode, { kind: 'map' }>, key: string): Pair | undefined {
  return map.byKey?.get(key);
}

/** Builds the positioned tree of the first document from the flat event stream, with a stack rather than recursion. */
class TreeBuilder {
  /** Set when the document holds what the two readers key differently (a null key): the `yaml` package reads it then. */
  unsupported = false;
  constructor(
    private readonly text: string,
    private readonly schema: typeof CORE_SCHEMA,
    private readonly version: '1.1' | '1.2',
  ) {}

  build(events: Event[]): PositionedNode | undefined {
    if (events[0]?.type !== EVENT_ID.DOCUMENT) return undefined;
    type Open = {
      node: Extract<PositionedNode, { kind: 'map' | 'seq' }>;
      flow: boolean;
      pendingKey?: PositionedNode;
      pendingKeyText?: string;
      last?: 'empty' | 'block' | 'other';
    };
    const stack: Open[] = [];
    // Block collections: their end is already a line's.
    const blockEnds = new WeakSet<PositionedNode>();
    const endsLine = (n: PositionedNode) => blockEnds.has(n);
    let root: PositionedNode | undefined;
    const attach = (child: PositionedNode, keyText?: string) => {
      const top = stack[stack.length - 1];
      if (!top) {
        root = child;
        return;
      }
      if (top.node.kind === 'seq') {
        top.node.items.push(child);
      } else if (top.pendingKey === undefined) {
        top.pendingKey = child;
        top.pendingKeyText = child.kind === 'scalar' ? keyText : undefined;
        return;
      } else {
        const k = top.pendingKey;
        // `key:` with no value sits at the end of its key.
        const value = child.kind === 'scalar' && child.empty ? { ...child, start: k.end, end: k.end } : child;
        top.node.pairs.push({ key: top.pendingKeyText, keyStart: k.start, keyEnd: k.end, value });
        top.pendingKey = undefined;
        top.node.end = Math.max(top.node.end, value.end);
        top.last = value !== child ? 'empty' : endsLine(child) ? 'block' : 'other';
        return;
      }
      top.node.end = Math.max(top.node.end, child.end);
      top.last = endsLine(child) ? 'block' : 'other';
    };
    for (let i = 1; i < events.length; i++) {
      const e = events[i];
      if (e.type === EVENT_ID.SCALAR) {
        const node = this.scalar(e);
        const top = stack[stack.length - 1];
        const asKey = top?.node.kind === 'map' && top.pendingKey === undefined;
        attach(node, asKey ? this.keyText(e) : undefined);
      } else if (e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE) {
        const flow = e.style === COLLECTION_STYLE.FLOW;
        // A flow collection's end is found after its opening bracket (even when it is empty).
        const end = flow ? e.start + 1 : e.start;
        const node: Extract<PositionedNode, { kind: 'map' | 'seq' }> =
          e.type === EVENT_ID.MAPPING
            ? { kind: 'map', start: e.start, end, pairs: [] }
            : { kind: 'seq', start: e.start, end, items: [] };
        stack.push({ node, flow });
      } else if (e.type === EVENT_ID.POP) {
        const open = stack.pop();
        if (!open) break; // the document's end
        // A flow collection ends at its closing bracket; a block one, as the `yaml` package has it,
        // at the start of the line after its last value's (a comment on that line included).
        // (Ending in `key:` with no value, at that line's end; in a block collection, where that one ends.)
        if (open.flow) {
          open.node.end = this.closingBracket(open.node.end, open.node.kind === 'map' ? '}' : ']');
        } else {
          if (open.last !== 'block') open.node.end = this.nextLineStart(open.node.end, open.last === 'empty');
          blockEnds.add(open.node);
        }
        attach(open.node);
      }
    }
    return root;
  }

  private scalar(e: ScalarEvent): Extract<PositionedNode, { kind: 'scalar' }> {
    if (e.valueStart < 0) return { kind: 'scalar', start: 0, end: 0, empty: true };
    // Quoted scalars' offsets exclude the quotes; the `yaml` package's ranges include them.
    const quoted = e.style === SCALAR_STYLE.SINGLE_QUOTED || e.style === SCALAR_STYLE.DOUBLE_QUOTED;
    return {
      kind: 'scalar',
      start: quoted ? e.valueStart - 1 : e.valueStart,
      end: quoted ? e.valueEnd + 1 : e.valueEnd,
      empty: false,
    };
  }

  /**
   * The key as the constructed object has it: plain keys resolved by the schema (`1`, `true`,
   * `null`, and in YAML 1.1 `yes`, `on`, `off`), others as written.
   */
  private keyText(e: ScalarEvent): string {
    const written = getScalarValue(this.text, e);
    const resolvable = this.version === '1.1' ? /^[-+.0-9~nNtTfFyYoO]/ : /^[-+.0-9~nNtTfF]/;
    if (e.style !== SCALAR_STYLE.PLAIN || !resolvable.test(written)) return written;
    const [value] = constructFromEvents(
      [
        { type: EVENT_ID.DOCUMENT, explicitStart: false, explicitEnd: false, directives: [] },
        e,
        { type: EVENT_ID.POP },
      ],
      { source: this.text, schema: this.schema },
    );
    // js-yaml keys a null key "null", the yaml package "" (and looks it up as "null").
    if (value === null) this.unsupported = true;
    return String(value);
  }

  private nextLineStart(from: number, lineEnd: boolean): number {
    const nl = this.text.indexOf('\n', from);
    return nl < 0 ? this.text.length : lineEnd ? nl : nl + 1;
  }

  private closingBracket(from: number, bracket: '}' | ']'): number {
    let i = from;
    while (i < this.text.length) {
      const c = this.text[i];
      if (c === bracket) return i + 1;
      if (c === '#') {
        const nl = this.text.indexOf('\n', i);
        i = nl < 0 ? this.text.length : nl;
      } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === ',') {
        i++;
      } else {
        return from;
      }
    }
    return from;
  }
}
