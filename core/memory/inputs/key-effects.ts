// What each key of a config kind does to the memory estimate (issue 36, "never silently wrong"):
// modelled (the estimate reads it and follows it), named as not modelled on the estimate's line when
// set, or without an effect the estimate should follow (with why). Each kind keeps its table beside
// its reader (./*-keys.ts); test/unit/memory-key-effects.test.ts walks every key of every kind's
// schema and fails on one no table classifies, so a schema that gains a key needs a decision.
import type { NotModelled } from '../memory-input';
import type { ConfigValue } from './not-modelled';

export interface NamedKey {
  /** A value that makes the estimate name the key (the test sets it). */
  example: unknown;
  /**
   * Where the table itself names the key whenever it is set (not false, null or empty): in the
   * person's words, and which way the real peak goes. Absent: the kind's own code in
   * ./not-modelled.ts names it (from its value: an optimizer's name, a stage, …).
   */
  what?: string;
  effect?: NotModelled['effect'];
  /** Other keys the example needs to be named (DoRA only with use_peft). */
  with?: Record<string, unknown>;
}

export interface KeyTable {
  /** Read by the estimate, which follows them (the test checks the reader reads each). */
  modelled: string[];
  /** Modelled keys read before the kind's reader runs (from the text, or by the config's own check), and by what. */
  modelledBefore?: Record<string, string>;
  /** Changes memory by more than 10 % and is not modelled: named on the estimate's line when set. */
  notModelled: Record<string, NamedKey>;
  /** Keys (or whole sections) with no effect on the training step's peak the estimate should follow, and why. */
  none: Array<[why: string, keys: string[]]>;
}

export type KeyClass =
  | { is: 'modelled'; entry: string }
  | { is: 'not-modelled'; entry: string; named: NamedKey }
  | { is: 'none'; entry: string; why: string };

/**
 * How `table` classifies the key at `path` (dot-joined): the entry for the key itself, else for the
 * nearest section that holds it; undefined where nothing does.
 */
export function classOf(table: KeyTable, path: string): KeyClass | undefined {
  for (let p = path; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    if (table.modelled.includes(p)) return { is: 'modelled', entry: p };
    if (Object.hasOwn(table.notModelled, p)) return { is: 'not-modelled', entry: p, named: table.notModelled[p] };
    const none = table.none.find(([, keys]) => keys.includes(p));
    if (none) return { is: 'none', entry: p, why: none[0] };
  }
  return undefined;
}

/** Every entry of `table`, once each (the test refuses an entry given twice). */
export function entriesOf(table: KeyTable): string[] {
  return [...table.modelled, ...Object.keys(table.notModelled), ...table.none.flatMap(([, keys]) => keys)];
}

/**
 * `out` with the keys `table` names itself (those with `what`) that the config sets, each thing once:
 * a key whose `what` is already named (torch_compile_mode beside torch_compile) adds nothing.
 */
export function withNamedByTable(out: NotModelled[], table: KeyTable, get: ConfigValue): NotModelled[] {
  for (const [key, named] of Object.entries(table.notModelled)) {
    if (!named.what) continue;
    const v = get(key.split('.'));
    if (!isSet(v)) continue;
    if (out.some((n) => n.what === named.what)) continue;
    const shown = typeof v === 'object' ? '…' : String(v);
    out.push({ key: `${key}: ${shown}`, what: named.what, effect: named.effect ?? 'either' });
  }
  return out;
}

/** A value that turns a setting on: anything but absence, null, false, an empty string, list or mapping, "no" or "none". */
function isSet(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === '' || v === 'false') return false;
  if (typeof v === 'string' && /^(no|none)$/i.test(v.trim())) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}
