// Limits on what is parsed at all, and the document that stands for a text beyond them: no config
// is megabytes long or nested hundreds of levels deep, and parsing one that is would take the
// editor's time or overflow the parsers' stacks ("Maximum call stack size exceeded"). Such a text
// gets one clear syntax problem at the place it goes beyond the limit, and no value.
import type {
  ConfigPath,
  CursorLocation,
  SourceDocument,
  SourceKind,
  SourceRange,
  SyntaxProblem,
} from './source-document';
import { TextPositions } from './text-positions';

/** The largest text parsed: 16 MiB (a 100,000-key config is about 3 MB). */
export const MAX_PARSED_CHARS = 16 * 1024 * 1024;
/** The deepest nesting parsed; real configs stay under 10. */
export const MAX_NESTING = 200;

/** Why the text is not parsed, with the offset to point at; undefined when it is within the limits. */
export function beyondLimits(text: string, kind: SourceKind): { message: string; offset: number } | undefined {
  if (text.length > MAX_PARSED_CHARS) {
    return {
      message: `the file has ${text.length.toLocaleString('en-US')} characters, more than any config (checks stop at ${MAX_PARSED_CHARS.toLocaleString('en-US')})`,
      offset: 0,
    };
  }
  // TOML nests by dotted keys and headers, not indentation; its inline tables and arrays by brackets, as JSON.
  const deep = kind === 'yaml' ? deepestYaml(text) : deepestJson(text);
  return deep === undefined
    ? undefined
    : {
        message: `nested more than ${MAX_NESTING} levels deep: no config is, and the file is not read further`,
        offset: deep,
      };
}

/** The offset where JSON (with comments) nests beyond MAX_NESTING, if it does. */
function deepestJson(text: string): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2f) {
      while (i < text.length && text.charCodeAt(i) !== 0x0a) i++;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2a) {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_NESTING) return i;
    } else if ((c === 0x7d || c === 0x5d) && depth > 0) {
      depth--;
    }
  }
  return undefined;
}

/**
 * The offset where YAML nests beyond MAX_NESTING, if it does: block levels (the stack of
 * indentations of the lines above, plus "- " entries opened on the line) and flow brackets
 * together. Quotes open a string only where a token starts, so "don't" is a plain word.
 */
function deepestYaml(text: string): number | undefined {
  const indents: number[] = [];
  let flow = 0;
  for (let start = 0; start < text.length;) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let i = start;
    while (i < end && text.charCodeAt(i) === SPACE) i++;
    if (i < end && text.charCodeAt(i) !== HASH && flow === 0) {
      while (indents.length && indents[indents.length - 1] >= i - start) indents.pop();
      indents.push(i - start);
    }
    let dashes = 0;
    while (flow === 0 && text.charCodeAt(i) === DASH && (text.charCodeAt(i + 1) === SPACE || i + 1 === end)) {
      dashes++;
      i += 2;
      while (i < end && text.charCodeAt(i) === SPACE) i++;
    }
    if (indents.length + dashes > MAX_NESTING) return i;
    for (; i < end; i++) {
      const c = text.charCodeAt(i);
      // Most characters are none of these: one comparison chain per character.
      if (
        c > BRACE_CLOSE ||
        (c !== QUOTE &&
          c !== APOSTROPHE &&
          c !== HASH &&
          c !== BRACKET_OPEN &&
          c !== BRACKET_CLOSE &&
          c !== BRACE_OPEN &&
          c !== BRACE_CLOSE)
      )
        continue;
      if (c === QUOTE || c === APOSTROPHE) {
        if (i > start && !TOKEN_STARTS.has(text.charCodeAt(i - 1))) continue;
        for (i++; i < end && text.charCodeAt(i) !== c; i++) if (c === QUOTE && text.charCodeAt(i) === BACKSLASH) i++;
      } else if (c === HASH) {
        if (i === start || text.charCodeAt(i - 1) === SPACE) break;
      } else if (c === BRACKET_OPEN || c === BRACE_OPEN) {
        if (indents.length + dashes + ++flow > MAX_NESTING) return i;
      } else if (flow > 0) {
        flow--;
      }
    }
    start = end + 1;
  }
  return undefined;
}

const SPACE = 0x20;
const HASH = 0x23;
const DASH = 0x2d;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;
const BACKSLASH = 0x5c;
const BRACKET_OPEN = 0x5b;
const BRACKET_CLOSE = 0x5d;
const BRACE_OPEN = 0x7b;
const BRACE_CLOSE = 0x7d;
/** Characters after which a quote opens a string: the start of a token. */
const TOKEN_STARTS = new Set([SPACE, 0x09, BRACKET_OPEN, BRACE_OPEN, 0x2c, 0x3a]);

/** A text that was not parsed: one syntax problem, no value, nothing to locate but the word at the cursor. */
export class UnreadDocument extends TextPositions implements SourceDocument {
  readonly value = undefined;
  readonly syntaxErrors: SyntaxProblem[];

  constructor(
    text: string,
    readonly kind: SourceKind,
    why: { message: string; offset: number },
  ) {
    super(text);
    this.syntaxErrors = [
      { message: why.message, range: this.range(why.offset, Math.min(text.length, why.offset + 1)) },
    ];
  }

  rangeOf(_path: ConfigPath): SourceRange {
    return this.range(0, 0);
  }

  has(): boolean {
    return false;
  }

  valueSpan(): undefined {
    return undefined;
  }

  locate(offset: number): CursorLocation {
    return { path: [], part: 'key', word: this.wordAt(offset) };
  }
}
