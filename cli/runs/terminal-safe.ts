// Text from a run folder (tag names, run ids, problem excerpts) is data, not terminal control: an
// `ESC ] 0 ; … BEL` in a TensorBoard tag retitled the terminal `fsdp-runs show` printed it to, and
// other sequences can move the cursor, rewrite earlier lines or reorder text (bidi overrides).
// Every such character is shown as its escape instead.

// C0 controls (tab and newline too: one cell is one line), DEL and C1 controls, the line and
// paragraph separators, and the invisible bidirectional marks, embeddings, overrides and isolates.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `s` with every control character written as \xNN or \uNNNN, for a terminal. */
export function terminalSafe(s: string): string {
  return s.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * JSON for a terminal or a pipe: JSON.stringify already escapes C0 controls inside strings, not DEL,
 * C1 controls or bidi marks; those are escaped here as \uNNNN, which leaves the JSON the same value.
 */
export function terminalSafeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    UNSAFE_IN_JSON,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

// What JSON.stringify leaves unescaped of UNSAFE (its C0 controls outside strings are its own layout).
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
