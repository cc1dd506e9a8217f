// A config file parsed with source positions, YAML, JSON-with-comments or TOML alike, so every problem
// found in the value can point at the exact key or value in the text, every edit can touch exactly
// one entry, and completion and hover know which key the cursor is on.
import { JsonSourceDocument } from './json-document';
import { readLargeYaml } from './large-yaml-document';
import { TomlSourceDocument } from './toml-document';
import { beyondLimits, UnreadDocument } from './unread-document';
import { YamlSourceDocument } from './yaml-document';

export type ConfigPath = ReadonlyArray<string | number>;

/** The syntaxes configs are written in. */
export type SourceKind = 'yaml' | 'json' | 'toml';

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
  /** Problems the reader tolerates (PyYAML keeps the last of duplicate keys) are warnings. */
  severity?: 'warning';
}

/** What the cursor is on: a key (existing or being typed), or the value of a key. */
export interface CursorLocation {
  /** For 'key': the mapping the key belongs to. For 'value': the key whose value it is. */
  path: ConfigPath;
  part: 'key' | 'value';
  /** The word under the cursor that a completion replaces (empty at a blank position). */
  word: { text: string; start: number; end: number };
}

export interface SourceDocument {
  readonly kind: SourceKind;
  readonly text: string;
  /** The parsed value; undefined when the text is empty or unparseable at the top. */
  readonly value: unknown;
  readonly syntaxErrors: SyntaxProblem[];
  /** Range of the key (`part: 'key'`) or the value at `path`; the nearest existing ancestor if absent. */
  rangeOf(path: ConfigPath, part?: 'key' | 'value'): SourceRange;
  /** Whether `path` exists in the document. */
  has(path: ConfigPath): boolean;
  /** Offsets of the value at `path`, undefined when absent. */
  valueSpan(path: ConfigPath): { start: number; end: number } | undefined;
  /** The key or value at `offset`, for completion and hover. */
  locate(offset: number): CursorLocation;
  positionAt(offset: number): SourcePosition;
  offsetAt(position: SourcePosition): number;
}

export interface ParseOptions {
  /**
   * YAML version of the reader the file is for. accelerate reads with PyYAML (YAML 1.1), where an
   * unquoted `no` is the boolean false; our own configs are YAML 1.2.
   */
  yamlVersion?: '1.1' | '1.2';
}

/**
 * YAML texts (1.2, and 1.1 as accelerate's) longer than this are read by js-yaml's event parser when it reads them cleanly
 * (large-yaml-document.ts): about 8 times faster than the `yaml` package's CST, which the editor
 * needs for the edits and the cursor of documents people write by hand, not generated ones.
 */
export const LARGE_YAML_CHARS = 64 * 1024;

/** Parses within the limits of unread-document.ts; a text beyond them is one syntax problem, never a thrown error. */
export function parseSourceDocument(text: string, kind: SourceKind, options: ParseOptions = {}): SourceDocument {
  const beyond = beyondLimits(text, kind);
  if (beyond) return new UnreadDocument(text, kind, beyond);
  try {
    if (kind === 'toml') return new TomlSourceDocument(text);
    const version = options.yamlVersion ?? '1.2';
    if (kind === 'yaml' && text.length > LARGE_YAML_CHARS) {
      const large = readLargeYaml(text, version);
      if (large) return large;
    }
    return kind === 'yaml' ? new YamlSourceDocument(text, version) : new JsonSourceDocument(text);
  } catch (e) {
    // A stack the limits did not foresee (a parser's own recursion): still a problem, not a crash.
    if (e instanceof RangeError)
      return new UnreadDocument(text, kind, {
        message: `the file cannot be read: ${e.message} (nested too deeply?)`,
        offset: 0,
      });
    throw e;
  }
}

/** Chooses the parser by file name: .json/.jsonc/.hjson are JSON with comments, .toml TOML, the rest YAML. */
export function sourceKindOf(fileName: string): SourceKind {
  if (/\.toml$/i.test(fileName)) return 'toml';
  return /\.(json|jsonc|hjson)$/i.test(fileName) ? 'json' : 'yaml';
}
