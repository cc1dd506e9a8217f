// `fsdp-train prepare` (issue 35, "your own text"): real text (Debian's fortunes) through a real
// Hugging Face tokenizer (a byte-level BPE the test trains with the tokenizers library, as a model's
// tokenizer.json is) into token files the runtime reads; every input format; a vocabulary past 65,536
// in 32-bit ids; memory bounded on an input larger than the heap it is given; Ctrl+C leaves nothing.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeTokenFile } from '../../core/data/token-file';

const root = path.resolve(__dirname, '../..');
const cli = path.join(root, 'cli', 'fsdp-train.ts');
const FORTUNES = '/usr/share/games/fortunes';
const native = path.join(root, 'native', 'build', 'Release', 'fsdp-train-native');

/** The part of the tokenizers library's Tokenizer these tests use. */
interface HfTokenizer {
  setPreTokenizer(p: unknown): void;
  train(files: string[]): void;
  addSpecialTokens(tokens: string[]): void;
  addTokens(tokens: string[]): number;
  save(file: string): void;
  encode(text: string, pair: null, options: { addSpecialTokens: boolean }): Promise<{ getIds(): number[] }>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Tokenizer, BPE, byteLevelPreTokenizer } = require('tokenizers') as {
  Tokenizer: { new (model: unknown): HfTokenizer; fromFile(file: string): HfTokenizer };
  BPE: { empty(): unknown };
  byteLevelPreTokenizer(): unknown;
};

function prepare(args: string[], opts: { maxOldSpaceMb?: number } = {}) {
  const heap = opts.maxOldSpaceMb ? [`--max-old-space-size=${opts.maxOldSpaceMb}`] : [];
  return spawnSync(process.execPath, [...heap, '--import', 'tsx', cli, 'prepare', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 300_000,
  });
}

/** A model folder whose tokenizer.json is a byte-level BPE trained on `corpus`, `extra` tokens added. */
function tokenizerFolder(dir: string, corpus: string[], extra = 0): string {
  const folder = path.join(dir, 'tiny-model');
  mkdirSync(folder, { recursive: true });
  const tok = new Tokenizer(BPE.empty());
  tok.setPreTokenizer(byteLevelPreTokenizer());
  tok.train(corpus);
  tok.addSpecialTokens(['<|endoftext|>']);
  if (extra > 0) tok.addTokens(Array.from({ length: extra }, (_, i) => `<extra_${i}>`));
  tok.save(path.join(folder, 'tokenizer.json'));
  writeFileSync(path.join(folder, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|endoftext|>' }));
  return folder;
}

describe('fsdp-train prepare: your own text into token files', function () {
  this.timeout(600_000);
  let dir: string;
  let model: string;
  let corpus: string[]; // three fortunes files as .txt
  let large: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-prepare-'));
    mkdirSync(path.join(dir, 'txt'));
    corpus = ['cookie', 'computers', 'science'].map((f) => {
      const copy = path.join(dir, 'txt', `${f}.txt`);
      writeFileSync(copy, readFileSync(path.join(FORTUNES, f)));
      return copy;
    });
    model = tokenizerFolder(dir, corpus);
    large = path.join(dir, 'large.txt');
    const text = readFileSync(corpus[0]);
    for (let i = 0; i < 60; i++) appendFileSync(large, text); // 15 MB of text
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a folder of .txt files: one document per file, the end-of-text token after each, ids the tokenizer gives', async () => {
    const input = path.join(dir, 'txt');
    const out = path.join(dir, 'out-txt');
    const r = prepare(['--tokenizer', model, '--out', out, '--val-fraction', '0.34', input]);
    assert.equal(r.status, 0, r.stderr);
    const stats = JSON.parse(readFileSync(path.join(out, 'stats.json'), 'utf8'));
    assert.deepEqual([stats.train.documents, stats.val.documents], [2, 1]); // every 3rd document: science.txt
    const eos = stats.eos.id as number;
    const train = decodeTokenFile(readFileSync(path.join(out, 'train.tok')));
    const val = decodeTokenFile(readFileSync(path.join(out, 'val.tok')));
    assert.equal(train.header.dtype, 'uint16');
    assert.equal(train.header.tokenizer, 'tiny-model');
    assert.equal([...train.tokens].filter((t) => t === eos).length, 2);
    assert.equal(val.tokens[val.tokens.length - 1], eos);
    // val.tok is exactly the tokenizer's ids of science.txt, then the end of text.
    const tok = Tokenizer.fromFile(path.join(model, 'tokenizer.json'));
    const expected = (await tok.encode(readFileSync(corpus[2], 'utf8'), null, { addSpecialTokens: false })).getIds();
    assert.deepEqual([...val.tokens], [...expected, eos]);
    assert.equal(stats.train.tokens + stats.val.tokens, train.tokens.length + val.tokens.length);
    assert.ok(stats.tokens_per_s > 0);
    assert.match(r.stdout, /train: 2 documents, \d+ tokens/);
  });

  it('.jsonl records (the text field, or --field), paragraphs of a .txt, and what a malformed record says', () => {
    const jsonl = path.join(dir, 'quotes.jsonl');
    const paragraphs = readFileSync(corpus[0], 'utf8').split('\n%\n').slice(0, 400);
    assert.equal(paragraphs.length, 400);
    writeFileSync(jsonl, paragraphs.map((p, i) => JSON.stringify({ id: i, body: p })).join('\n') + '\n');
    const out = path.join(dir, 'out-jsonl');
    let r = prepare(['--tokenizer', model, '--out', out, jsonl]);
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /quotes\.jsonl:1: the record has no string field "text" \(its fields: id, body\); name the field with --field/,
    );
    r = prepare(['--tokenizer', model, '--out', out, '--field', 'body', jsonl]);
    assert.equal(r.status, 0, r.stderr);
    const stats = JSON.parse(readFileSync(path.join(out, 'stats.json'), 'utf8'));
    assert.deepEqual([stats.train.documents, stats.val.documents], [398, 2]); // documents 200 and 400 of 400
    const txt = path.join(dir, 'paragraphs.txt');
    writeFileSync(txt, 'first paragraph\nstill the first\n\nsecond\n\n\nthird\n');
    r = prepare([
      '--tokenizer',
      model,
      '--out',
      path.join(dir, 'out-para'),
      '--txt-unit',
      'paragraph',
      '--val-fraction',
      '0',
      txt,
    ]);
    assert.equal(r.status, 0, r.stderr);
    const para = JSON.parse(readFileSync(path.join(dir, 'out-para', 'stats.json'), 'utf8'));
    assert.equal(para.train.documents, 3);
    assert.equal(para.val.file, null);
    writeFileSync(jsonl, '{"text": "fine"}\n{"text": oops}\n');
    r = prepare(['--tokenizer', model, '--out', path.join(dir, 'out-bad'), jsonl]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /quotes\.jsonl:2: not a JSON record/);
    assert.ok(!existsSync(path.join(dir, 'out-bad', 'train.tok')), 'a failed preparation leaves no token file');
    assert.deepEqual(readdirSync(path.join(dir, 'out-bad')), [], 'nor a temporary one');
  });

  it('.parquet rows (written by pyarrow, Snappy, three row groups, a null row skipped) are documents of their text column', async () => {
    const file = path.join(dir, 'quotes.parquet');
    const quotes = readFileSync(corpus[1], 'utf8').split('\n%\n').slice(0, 300);
    writeFileSync(path.join(dir, 'quotes.json'), JSON.stringify(quotes));
    const py = spawnSync(
      path.join(root, '.venv', 'bin', 'python'),
      [
        '-c',
        [
          'import json, sys, pyarrow as pa, pyarrow.parquet as pq',
          'quotes = json.load(open(sys.argv[1]))',
          'table = pa.table({"id": list(range(len(quotes) + 1)), "content": quotes + [None]})',
          'pq.write_table(table, sys.argv[2], row_group_size=128, compression="snappy")',
          'print(pq.ParquetFile(sys.argv[2]).metadata.num_row_groups)',
        ].join('\n'),
        path.join(dir, 'quotes.json'),
        file,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(py.status, 0, py.stderr);
    assert.equal(py.stdout.trim(), '3'); // 301 rows in groups of 128
    let r = prepare(['--tokenizer', model, '--out', path.join(dir, 'out-pq'), file]);
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /quotes\.parquet: no column "text" \(its columns: id, content\); name the column with --field/,
    );
    r = prepare([
      '--tokenizer',
      model,
      '--out',
      path.join(dir, 'out-pq'),
      '--field',
      'content',
      '--val-fraction',
      '0',
      file,
    ]);
    assert.equal(r.status, 0, r.stderr);
    const stats = JSON.parse(readFileSync(path.join(dir, 'out-pq', 'stats.json'), 'utf8'));
    assert.equal(stats.train.documents, 300);
    const tok = Tokenizer.fromFile(path.join(model, 'tokenizer.json'));
    const first = (await tok.encode(quotes[0], null, { addSpecialTokens: false })).getIds();
    const train = decodeTokenFile(readFileSync(path.join(dir, 'out-pq', 'train.tok')));
    assert.deepEqual([...train.tokens.subarray(0, first.length + 1)], [...first, stats.eos.id]);
  });

  it('a vocabulary past 65,536 is written as 32-bit ids, and the runtime trains on it', function () {
    if (!existsSync(native)) throw new Error(`${native} is not built (npm test builds it)`);
    const big = tokenizerFolder(path.join(dir, 'big'), corpus, 70_000);
    const out = path.join(dir, 'out-big');
    const r = prepare([
      '--tokenizer',
      big,
      '--out',
      out,
      '--txt-unit',
      'paragraph',
      '--val-fraction',
      '0.01',
      corpus[1],
    ]);
    assert.equal(r.status, 0, r.stderr);
    const stats = JSON.parse(readFileSync(path.join(out, 'stats.json'), 'utf8'));
    assert.equal(stats.dtype, 'uint32');
    assert.ok(stats.vocab_size > 65_536, String(stats.vocab_size));
    const train = decodeTokenFile(readFileSync(path.join(out, 'train.tok')));
    assert.equal(train.header.dtype, 'uint32');
    assert.ok(train.tokens.includes(stats.eos.id) && stats.eos.id < 65_536);
    // The runtime's own check of the file (header, checksum, every id against the vocabulary).
    const config = path.join(dir, 'big.json');
    writeFileSync(
      config,
      JSON.stringify({
        name: 'big-vocab',
        model: { d_model: 16, n_layers: 1, n_heads: 2, vocab_size: stats.vocab_size, max_seq_len: 32 },
        data: { train: path.join(out, 'train.tok'), val: path.join(out, 'val.tok'), seq_len: 32 },
        training: { batch_size_per_gpu: 2, max_steps: 2 },
        logging: { eval_batches: 1 },
        launch: { device: 'cpu', check_memory: false },
      }),
    );
    const run = spawnSync(native, ['--config', config, '--run-dir', path.join(dir, 'run-big')], {
      encoding: 'utf8',
      timeout: 240_000,
    });
    assert.equal(run.status, 0, `${run.stdout.slice(-800)}\n${run.stderr.slice(-1500)}`);
    const events = readFileSync(path.join(dir, 'run-big', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.ok(
      events.some((e) => e.type === 'run_end' && e.status === 'completed'),
      JSON.stringify(events.at(-1)),
    );
  });

  it('streams: memory stays flat as the input grows (2 MB and 12 MB of text, one document each)', () => {
    const rss: number[] = [];
    for (const mb of [2, 12]) {
      const input = path.join(dir, `flat-${mb}.txt`);
      writeFileSync(input, readFileSync(large).subarray(0, mb * 1_000_000));
      const out = path.join(dir, `out-flat-${mb}`);
      const r = prepare(['--tokenizer', model, '--out', out, '--val-fraction', '0', input]);
      assert.equal(r.status, 0, r.stderr.slice(-2000));
      const stats = JSON.parse(readFileSync(path.join(out, 'stats.json'), 'utf8'));
      assert.equal(stats.train.documents, 1);
      const header = readFileSync(path.join(out, 'train.tok')).subarray(0, 64);
      assert.equal(Number(header.readBigUInt64LE(16)), stats.train.tokens);
      rss.push(stats.max_rss_bytes);
    }
    // 10 MB more text: without collecting the tokenizer's encodings each batch, ~200 MB more memory.
    const grew = (rss[1] - rss[0]) / 2 ** 20;
    assert.ok(grew < 64, `peak memory grew by ${grew.toFixed(0)} MiB for 10 MB more input (${rss.join(', ')} bytes)`);
  });

  it('Ctrl+C stops it and leaves no half-written file; the folder keeps what it held', async () => {
    const out = path.join(dir, 'out-stopped');
    mkdirSync(out);
    writeFileSync(path.join(out, 'train.tok'), 'an earlier preparation');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', cli, 'prepare', '--tokenizer', model, '--out', out, large],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    // Stop it once it has started writing: its temporary file is in the folder.
    await new Promise<void>((resolve, reject) => {
      const poll = setInterval(() => {
        if (readdirSync(out).some((f) => f.startsWith('.train.tok.tmp-'))) {
          clearInterval(poll);
          child.kill('SIGINT');
          resolve();
        }
      }, 20);
      child.on('exit', () => {
        clearInterval(poll);
        reject(new Error(`ended before it was stopped: ${stderr}`));
      });
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    assert.equal(code, 130, stderr);
    assert.match(stderr, /stopped by SIGINT; nothing was written to/);
    assert.deepEqual(readdirSync(out), ['train.tok']);
    assert.equal(readFileSync(path.join(out, 'train.tok'), 'utf8'), 'an earlier preparation');
  });

  it('refuses what it cannot read, saying what and where', () => {
    let r = prepare(['--out', path.join(dir, 'x'), corpus[0]]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--tokenizer is required/);
    r = prepare(['--tokenizer', path.join(dir, 'nowhere'), '--out', path.join(dir, 'x'), corpus[0]]);
    assert.match(
      r.stderr,
      /nowhere: no such file \(--tokenizer takes a model folder holding tokenizer\.json, or the file\)/,
    );
    r = prepare(['--tokenizer', model, '--out', path.join(dir, 'x'), '--eos', '<nope>', corpus[0]]);
    assert.match(r.stderr, /the tokenizer has no token "<nope>" \(--eos\)/);
    r = prepare(['--tokenizer', model, '--out', path.join(dir, 'x'), path.join(FORTUNES, 'fortunes.dat')]);
    assert.match(r.stderr, /fortunes\.dat: not a file prepare reads/);
    r = prepare(['--tokenizer', model, '--out', path.join(dir, 'x'), '--val-fraction', '1', corpus[0]]);
    assert.match(r.stderr, /--val-fraction 1: must be a number from 0 up to \(not including\) 1/);
  });
});
