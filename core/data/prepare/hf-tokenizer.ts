// A model's own Hugging Face tokenizer (its tokenizer.json), read by the `tokenizers` library's Node
// binding — the same Rust library transformers uses, so ids match the model's, and a person with no
// Python can prepare data. Loaded on first use: the binding is a native module the editor's bundles
// leave out.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export interface TextTokenizer {
  /** Ids the model's embedding must hold: every id is below it (added tokens included). */
  vocabSize: number;
  /** The end-of-text token put between documents. */
  eos: { token: string; id: number };
  /** A short name for the token file's header (at most 16 ASCII characters). */
  name: string;
  /** The ids of each text, without special tokens (a document's boundary is the end-of-text token). */
  encodeBatch(texts: string[]): Promise<number[][]>;
}

interface TokenizersBinding {
  Tokenizer: {
    fromFile(file: string): {
      getVocabSize(withAddedTokens?: boolean): number;
      tokenToId(token: string): number | null;
      encodeBatch(texts: string[], options?: { addSpecialTokens?: boolean }): Promise<{ getIds(): number[] }[]>;
    };
  };
}

// Names models give their end-of-text token, tried in order when the tokenizer's folder does not say.
const WELL_KNOWN_EOS = ['<|endoftext|>', '<|end_of_text|>', '</s>', '<|im_end|>', '<eos>'];

/**
 * Loads DIR/tokenizer.json (or the tokenizer.json given) and finds its end-of-text token: `eos`
 * when given, else the folder's tokenizer_config.json `eos_token`, else a well-known name.
 */
export function loadHfTokenizer(source: string, eos?: string): TextTokenizer {
  const isDir = existsSync(source) && statSync(source).isDirectory();
  const file = isDir ? path.join(source, 'tokenizer.json') : source;
  if (!existsSync(file))
    throw new Error(`${file}: no such file (--tokenizer takes a model folder holding tokenizer.json, or the file)`);
  const { Tokenizer } = loadBinding();
  let tok: ReturnType<TokenizersBinding['Tokenizer']['fromFile']>;
  try {
    tok = Tokenizer.fromFile(file);
  } catch (e) {
    throw new Error(`${file}: not a tokenizer the tokenizers library reads (${(e as Error).message})`, { cause: e });
  }
  const folder = path.dirname(file);
  const candidates = eos !== undefined ? [eos] : [...configuredEos(folder), ...WELL_KNOWN_EOS];
  const found = candidates.map((token) => ({ token, id: tok.tokenToId(token) })).find((c) => c.id !== null);
  if (!found || found.id === null) {
    throw new Error(
      eos !== undefined
        ? `${file}: the tokenizer has no token "${eos}" (--eos)`
        : `${file}: no end-of-text token found (tried ${candidates.join(', ')}); name one with --eos`,
    );
  }
  const vocabSize = Math.max(tok.getVocabSize(true), found.id + 1);
  return {
    vocabSize,
    eos: { token: found.token, id: found.id },
    name: headerName(isDir ? path.basename(path.resolve(source)) : path.basename(folder)),
    async encodeBatch(texts) {
      const encodings = await tok.encodeBatch(texts, { addSpecialTokens: false });
      return encodings.map((e) => e.getIds());
    },
  };
}

function loadBinding(): TokenizersBinding {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('tokenizers') as TokenizersBinding;
  } catch (e) {
    throw new Error(
      `the tokenizers library is not installed here (${(e as Error).message.split('\n')[0]}); run npm install in the project`,
      { cause: e },
    );
  }
}

/** The end-of-text token a model folder's tokenizer_config.json names, if it names one. */
function configuredEos(folder: string): string[] {
  const file = path.join(folder, 'tokenizer_config.json');
  if (!existsSync(file)) return [];
  try {
    const eos = (JSON.parse(readFileSync(file, 'utf8')) as { eos_token?: unknown }).eos_token;
    if (typeof eos === 'string') return [eos];
    if (eos && typeof eos === 'object' && typeof (eos as { content?: unknown }).content === 'string')
      return [(eos as { content: string }).content];
  } catch {
    // an unreadable config names nothing; the well-known names are tried
  }
  return [];
}

/** The token file header's tokenizer field: printable ASCII, at most 16 characters. */
function headerName(name: string): string {
  return name.replace(/[^\x20-\x7e]/g, '_').slice(0, 16) || 'hf';
}
