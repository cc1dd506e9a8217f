// Comments in a JSON file, found by jsonc-parser's scanner (so a `//` inside a string is not one):
// DeepSpeed's own loader (hjson) reads them; accelerate's deepspeed_config_file and the Hugging Face
// Trainer's HfDeepSpeedConfig read the same file with json.load, which refuses them.
import { createScanner } from 'jsonc-parser';

// jsonc-parser's SyntaxKind is a const enum, which isolated modules cannot read: its values.
const LINE_COMMENT = 12;
const BLOCK_COMMENT = 13;
const EOF = 17;

/** Offset and length of every `//` and block comment in `text`, in order. */
export function jsonComments(text: string): Array<{ offset: number; length: number }> {
  const scanner = createScanner(text, false);
  const out: Array<{ offset: number; length: number }> = [];
  for (let t = scanner.scan(); t !== EOF; t = scanner.scan())
    if (t === LINE_COMMENT || t === BLOCK_COMMENT)
      out.push({ offset: scanner.getTokenOffset(), length: scanner.getTokenLength() });
  return out;
}
