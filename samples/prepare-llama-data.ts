// The Llama sample's data (samples/smollm2-135m-cpu.yaml): Debian's fortunes corpus through a byte-level
// BPE tokenizer trained here, tokenized by `fsdp-train prepare`'s code (core/data/prepare), as a
// person's own text would be.
//
//   node --import tsx samples/prepare-llama-data.ts [--out DIR] [--corpus DIR] [--vocab-size N]
//
// 1. the fortunes (as samples/prepare-data.ts reads them) into DIR/fortunes-bpe/fortunes.jsonl, one
//    record a fortune, and their train split (every fortune but each tenth) into fortunes-train.txt;
// 2. the project's .venv Python trains the tokenizer on the train split (samples/train-tokenizer.py:
//    tokenizers' Node binding cannot be given a trainer's settings) into DIR/fortunes-bpe/tokenizer.json;
// 3. prepare tokenizes fortunes.jsonl with it into train.tok / val.tok (--val-fraction 0.1: each tenth
//    fortune, the same split as step 1) and stats.json.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadHfTokenizer } from '../core/data/prepare/hf-tokenizer';
import { prepareData, type PrepareStats } from '../core/data/prepare/prepare-data';
import { readFortunes } from './prepare-data';

export const LLAMA_SAMPLE_VOCAB = 8192;
const VAL_PERIOD = 10;

interface Options {
  out: string;
  corpus: string;
  vocabSize: number;
  python: string;
}

export interface LlamaSampleData {
  dir: string;
  tokenizer: string;
  stats: PrepareStats;
}

export async function prepareLlamaData(opts: Options): Promise<LlamaSampleData> {
  const fortunes = await readFortunes(opts.corpus);
  if (fortunes.length < 100)
    throw new Error(`${opts.corpus}: found only ${fortunes.length} fortunes; install Debian's fortunes package`);
  if (!existsSync(opts.python))
    throw new Error(
      `${opts.python} is missing: the sample's tokenizer is trained by the project's Python environment (.venv, made by npm test's set-up: node scripts/setup/python-env.mjs)`,
    );
  const dir = path.join(opts.out, 'fortunes-bpe');
  await mkdir(dir, { recursive: true });
  const docs = path.join(dir, 'fortunes.jsonl');
  const trainText = path.join(dir, 'fortunes-train.txt');
  await writeFile(docs, fortunes.map((text) => JSON.stringify({ text })).join('\n') + '\n');
  const train = fortunes.filter((_, i) => (i + 1) % VAL_PERIOD !== 0);
  await writeFile(trainText, train.join('\n\n') + '\n');
  const said = execFileSync(
    opts.python,
    [path.join(__dirname, 'train-tokenizer.py'), '--vocab-size', String(opts.vocabSize), '--out', dir, trainText],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  process.stdout.write(said);
  const tokenizer = path.join(dir, 'tokenizer.json');
  const stats = await prepareData({
    tokenizer: loadHfTokenizer(tokenizer),
    inputs: [docs],
    outDir: dir,
    valFraction: 1 / VAL_PERIOD,
    field: 'text',
    txtUnit: 'file',
  });
  return { dir, tokenizer, stats };
}

function parseArgs(argv: string[]): Options {
  const root = path.resolve(__dirname, '..');
  const opts: Options = {
    out: path.join(__dirname, 'data'),
    corpus: '/usr/share/games/fortunes',
    vocabSize: LLAMA_SAMPLE_VOCAB,
    python: path.join(root, '.venv', 'bin', 'python'),
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--out' && value) opts.out = path.resolve(value);
    else if (flag === '--corpus' && value) opts.corpus = path.resolve(value);
    else if (flag === '--vocab-size' && value && /^\d+$/.test(value)) opts.vocabSize = Number(value);
    else
      throw new Error(
        `unknown argument ${flag}${value ? ` ${value}` : ''}; usage: prepare-llama-data [--out DIR] [--corpus DIR] [--vocab-size N]`,
      );
  }
  return opts;
}

if (require.main === module) {
  const opts = parseArgs(process.argv.slice(2));
  stat(opts.corpus)
    .then(() => prepareLlamaData(opts))
    .then(({ dir, stats }) =>
      console.log(
        `wrote ${path.join(dir, 'train.tok')} and val.tok: ${JSON.stringify({ train: stats.train, val: stats.val })}`,
      ),
    )
    .catch((e: Error) => {
      console.error(`prepare-llama-data: ${e.message}`);
      process.exit(1);
    });
}
