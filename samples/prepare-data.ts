// Builds train/val token files from a real English corpus shipped by an installed package:
// Debian's `fortunes` (about 2.5 MB of quotations under /usr/share/games/fortunes).
//
//   node --import tsx samples/prepare-data.ts [--tokenizer byte|gpt2] [--out DIR] [--corpus DIR]
//
// Every tenth fortune goes to the validation split, so both splits cover every file. Writes
// fortunes-<tokenizer>-{train,val}.tok and their .stats.json (token count, unigram entropy).
import { mkdir, readdir, readFile, stat, writeFile, lstat } from 'node:fs/promises';
import path from 'node:path';
import { unigramEntropy, writeTokenFile } from '../core/data/token-file';

const GPT2_VOCAB = 50257;
const GPT2_END_OF_TEXT = 50256;

interface Options {
  tokenizer: 'byte' | 'gpt2';
  out: string;
  corpus: string;
}

export async function prepareData(opts: Options): Promise<{ train: string; val: string; entropy: number }> {
  const fortunes = await readFortunes(opts.corpus);
  if (fortunes.length < 100)
    throw new Error(`${opts.corpus}: found only ${fortunes.length} fortunes; install Debian's fortunes package`);
  const encode = opts.tokenizer === 'gpt2' ? await gpt2Encoder() : byteEncoder;
  const train: number[] = [];
  const val: number[] = [];
  fortunes.forEach((text, i) => (i % 10 === 9 ? val : train).push(...encode(text)));
  const vocab = opts.tokenizer === 'gpt2' ? GPT2_VOCAB : 256;
  await mkdir(opts.out, { recursive: true });
  const base = path.join(opts.out, `fortunes-${opts.tokenizer}`);
  const entropy = await writeSplit(`${base}-train`, Uint16Array.from(train), vocab, opts);
  await writeSplit(`${base}-val`, Uint16Array.from(val), vocab, opts);
  return { train: `${base}-train.tok`, val: `${base}-val.tok`, entropy };
}

async function writeSplit(base: string, tokens: Uint16Array, vocab: number, opts: Options): Promise<number> {
  const entropy = unigramEntropy(tokens);
  // A new file renamed over the old one: a trainer reading the old one is left reading it, whole.
  writeTokenFile(`${base}.tok`, tokens, vocab, opts.tokenizer);
  const stats = {
    corpus: `Debian fortunes (${opts.corpus})`,
    tokenizer: opts.tokenizer,
    vocab_size: vocab,
    tokens: tokens.length,
    unigram_entropy_nats: entropy,
  };
  await writeFile(`${base}.stats.json`, JSON.stringify(stats, null, 2) + '\n');
  return entropy;
}

/** The fortunes of every plain data file (not the .dat indexes, not the .u8 links), in name order. */
export async function readFortunes(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => !n.endsWith('.dat')).sort();
  const fortunes: string[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const info = await lstat(file);
    if (!info.isFile()) continue;
    const text = await readFile(file, 'utf8');
    for (const f of text.split(/^%\r?\n/m)) {
      const trimmed = f.replace(/\s+$/, '');
      if (trimmed) fortunes.push(trimmed);
    }
  }
  return fortunes;
}

function byteEncoder(text: string): number[] {
  return [...Buffer.from(`${text}\n\n`, 'utf8')];
}

async function gpt2Encoder(): Promise<(text: string) => number[]> {
  // r50k_base is GPT-2's byte-level BPE vocabulary (50257 tokens, <|endoftext|> = 50256).
  const { encode } = await import('gpt-tokenizer/encoding/r50k_base');
  return (text) => [...encode(text), GPT2_END_OF_TEXT];
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { tokenizer: 'byte', out: path.join(__dirname, 'data'), corpus: '/usr/share/games/fortunes' };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--tokenizer' && (value === 'byte' || value === 'gpt2')) opts.tokenizer = value;
    else if (flag === '--out' && value) opts.out = path.resolve(value);
    else if (flag === '--corpus' && value) opts.corpus = path.resolve(value);
    else
      throw new Error(
        `unknown argument ${flag}${value ? ` ${value}` : ''}; usage: prepare-data [--tokenizer byte|gpt2] [--out DIR] [--corpus DIR]`,
      );
    i++;
  }
  return opts;
}

if (require.main === module) {
  const opts = parseArgs(process.argv.slice(2));
  stat(opts.corpus)
    .then(() => prepareData(opts))
    .then(({ train, val, entropy }) =>
      console.log(`wrote ${train} and ${val}; unigram entropy ${entropy.toFixed(4)} nats/token`),
    )
    .catch((e: Error) => {
      console.error(`prepare-data: ${e.message}`);
      process.exit(1);
    });
}
