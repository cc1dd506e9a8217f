// `npx fsdp-train prepare --tokenizer DIR|tokenizer.json --out DIR INPUT...`: a person's own text
// (.txt, .jsonl, .parquet) into train.tok / val.tok and stats.json with the model's own Hugging Face tokenizer
// (core/data/prepare/). A progress line with the time left goes to stderr on a terminal; Ctrl+C (or
// SIGTERM) stops it and leaves no half-written file.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { inputFiles, type TxtUnit } from '../../core/data/prepare/documents';
import { loadHfTokenizer } from '../../core/data/prepare/hf-tokenizer';
import { prepareData, type PrepareProgress } from '../../core/data/prepare/prepare-data';

export const PREPARE_USAGE = `usage: fsdp-train prepare --tokenizer DIR|tokenizer.json --out DIR [--val-fraction F] [--field NAME]
                          [--txt-unit file|paragraph|line] [--eos TOKEN] [--progress json] INPUT...

Tokenizes your own text with your model's Hugging Face tokenizer (its tokenizer.json) into
OUT/train.tok and OUT/val.tok, the runtime's token files (32-bit ids when the vocabulary passes
65,536), and OUT/stats.json (documents, tokens, tokens/s). INPUT: .txt, .jsonl and .parquet files,
or folders holding them. A .txt file is one document (--txt-unit paragraph: blank-line separated
paragraphs; line: each line); a .jsonl record or a .parquet row is one document, its "text" field
(--field NAME). The end-of-text token (the tokenizer folder's eos_token, or --eos) follows every
document. --val-fraction (default 0.005): every round(1/F)-th document goes to val.tok; 0 writes
none. --progress json: progress as JSON lines on stderr (for programs), instead of a line redrawn
on a terminal.
Exit codes: 0 done, 1 failed, 2 bad arguments, 130 / 143 stopped by Ctrl+C / SIGTERM.`;

const EXIT_ARGS = 2;
const TXT_UNITS: TxtUnit[] = ['file', 'paragraph', 'line'];

export async function prepareCommand(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        tokenizer: { type: 'string' },
        out: { type: 'string' },
        'val-fraction': { type: 'string', default: '0.005' },
        field: { type: 'string', default: 'text' },
        'txt-unit': { type: 'string', default: 'file' },
        eos: { type: 'string' },
        progress: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    console.error(`fsdp-train prepare: ${(e as Error).message}\n${PREPARE_USAGE}`);
    return EXIT_ARGS;
  }
  const v = args.values;
  if (v.help) {
    console.log(PREPARE_USAGE);
    return 0;
  }
  const valFraction = Number(v['val-fraction']);
  const problem =
    v.tokenizer === undefined
      ? '--tokenizer is required (a model folder holding tokenizer.json, or the file)'
      : v.out === undefined
        ? '--out is required (the folder train.tok and val.tok go to)'
        : args.positionals.length === 0
          ? 'name at least one INPUT (.txt, .jsonl, .parquet, or a folder of them)'
          : !(valFraction >= 0 && valFraction < 1)
            ? `--val-fraction ${v['val-fraction']}: must be a number from 0 up to (not including) 1`
            : !TXT_UNITS.includes(v['txt-unit'] as TxtUnit)
              ? `--txt-unit ${v['txt-unit']}: must be one of ${TXT_UNITS.join(', ')}`
              : v.progress !== undefined && v.progress !== 'json'
                ? `--progress ${v.progress}: the one form is json`
                : undefined;
  if (problem || v.tokenizer === undefined || v.out === undefined) {
    console.error(`fsdp-train prepare: ${problem}\n${PREPARE_USAGE}`);
    return EXIT_ARGS;
  }
  let inputs: string[];
  let tokenizer;
  try {
    inputs = inputFiles(args.positionals);
    tokenizer = loadHfTokenizer(v.tokenizer, v.eos);
  } catch (e) {
    console.error(`fsdp-train prepare: ${(e as Error).message}`);
    return EXIT_ARGS;
  }
  const outDir = path.resolve(v.out);
  const controller = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const stop = (signal: NodeJS.Signals) => {
    stoppedBy = signal;
    controller.abort();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const progress = v.progress === 'json' ? progressJson() : process.stderr.isTTY ? progressLine() : undefined;
  const redrawn = progress !== undefined && v.progress !== 'json';
  try {
    console.error(
      `preparing ${inputs.length} file${inputs.length === 1 ? '' : 's'} with ${tokenizer.name}'s tokenizer ` +
        `(vocabulary ${tokenizer.vocabSize}, end of text ${JSON.stringify(tokenizer.eos.token)} = ${tokenizer.eos.id})`,
    );
    const stats = await prepareData({
      inputs,
      outDir,
      tokenizer,
      valFraction,
      field: v.field ?? 'text',
      txtUnit: v['txt-unit'] as TxtUnit,
      signal: controller.signal,
      onProgress: progress,
      afterBatch: garbageCollector(),
    });
    if (redrawn) process.stderr.write('\n');
    const where = (f: string | null) => (f ? path.join(outDir, f) : 'not written');
    console.log(
      `train: ${stats.train.documents} documents, ${stats.train.tokens} tokens → ${where(stats.train.file)}\n` +
        `val:   ${stats.val.documents} documents, ${stats.val.tokens} tokens → ${where(stats.val.file)}\n` +
        `${stats.dtype} ids, ${stats.tokens_per_s} tokens/s; stats in ${path.join(outDir, 'stats.json')}`,
    );
    if (valFraction > 0 && stats.val.documents === 0) {
      const stale = existsSync(path.join(outDir, 'val.tok'))
        ? ` (the val.tok already in ${outDir} is not from this run)`
        : '';
      console.error(
        `warning: no document went to val.tok: ${stats.train.documents} documents, fewer than the ${Math.round(1 / valFraction)} ` +
          `that one in --val-fraction ${valFraction} needs${stale}; try --txt-unit paragraph or a larger --val-fraction`,
      );
    }
    return 0;
  } catch (e) {
    if (redrawn) process.stderr.write('\n');
    if (stoppedBy) {
      console.error(`fsdp-train prepare: stopped by ${stoppedBy}; nothing was written to ${outDir}`);
      return stoppedBy === 'SIGINT' ? 130 : 143;
    }
    console.error(`fsdp-train prepare: ${(e as Error).message}`);
    return 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/**
 * V8's collector, callable without --expose-gc on the command line: the tokenizer's encodings hold
 * native memory V8 does not count, so only an explicit collection frees them in step with the input.
 */
function garbageCollector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  return () => gc();
}

/** Progress for a program (the editor's command): one JSON object a line on stderr. */
function progressJson(): (p: PrepareProgress) => void {
  return (p) => process.stderr.write(`${JSON.stringify({ progress: p })}\n`);
}

/** A progress line redrawn in place: share of the inputs read, tokens, tokens/s and the time left. */
function progressLine(): (p: PrepareProgress) => void {
  return (p) => {
    const share = p.bytesTotal > 0 ? p.bytesRead / p.bytesTotal : 1;
    const width = 24;
    const bar = '#'.repeat(Math.round(share * width)).padEnd(width, '.');
    const left = share > 0 ? (p.seconds * (1 - share)) / share : 0;
    const rate = Math.round(p.tokens / Math.max(p.seconds, 1e-9));
    process.stderr.write(
      `\r[${bar}] ${(100 * share).toFixed(1)}%  ${p.tokens} tokens  ${rate} tokens/s  ${formatSeconds(left)} left `,
    );
  };
}

function formatSeconds(s: number): string {
  if (s < 60) return `${Math.ceil(s)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}
