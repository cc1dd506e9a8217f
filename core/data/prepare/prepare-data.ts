// `fsdp-train prepare`: a person's own text into the runtime's training data. Documents stream from
// the inputs through the model's tokenizer into train.tok and val.tok (native/FORMATS.md), the
// end-of-text token after each document; a document goes whole to one split. Memory holds one batch
// of text and its ids, whatever the inputs' size. Nothing is written under the real names until the
// end: an interrupted or failed preparation leaves the output folder as it was.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TokenFileWriter, type TokenDtype } from '../token-file';
import { documentPieces, type DocumentOptions } from './documents';
import type { TextTokenizer } from './hf-tokenizer';

export interface PrepareOptions extends DocumentOptions {
  inputs: string[];
  outDir: string;
  tokenizer: TextTokenizer;
  /** The share of documents that go to val.tok: every round(1 / f)-th document. 0: no val.tok. */
  valFraction: number;
  signal?: AbortSignal;
  onProgress?: (p: PrepareProgress) => void;
  /**
   * Called after each batch. The tokenizer's encodings live in native memory the JavaScript heap
   * does not see, so its garbage collector would let hundreds of MB of them pile up before it runs;
   * the CLI collects here, which keeps the process's memory flat whatever the input's size.
   */
  afterBatch?: () => void;
}

export interface PrepareProgress {
  bytesRead: number;
  bytesTotal: number;
  tokens: number;
  seconds: number;
}

export interface SplitStats {
  file: string | null;
  documents: number;
  tokens: number;
}

export interface PrepareStats {
  format: 'fsdp-studio/prepared-data/v1';
  tokenizer: string;
  vocab_size: number;
  dtype: TokenDtype;
  eos: { token: string; id: number };
  inputs: string[];
  bytes: number;
  seconds: number;
  tokens_per_s: number;
  val_fraction: number;
  /** The preparing process's peak resident memory. */
  max_rss_bytes: number;
  train: SplitStats;
  val: SplitStats;
}

/** Text sent to the tokenizer at once: enough for its threads, little enough to bound memory. */
const BATCH_CHARS = 512 * 1024;

export async function prepareData(opts: PrepareOptions): Promise<PrepareStats> {
  const t0 = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - t0) / 1e9;
  const bytesTotal = opts.inputs.reduce((sum, f) => sum + statSync(f).size, 0);
  mkdirSync(opts.outDir, { recursive: true });
  const { tokenizer } = opts;
  const header = { vocabSize: tokenizer.vocabSize, tokenizer: tokenizer.name };
  const train = new TokenFileWriter(path.join(opts.outDir, 'train.tok'), header);
  const val = opts.valFraction > 0 ? new TokenFileWriter(path.join(opts.outDir, 'val.tok'), header) : undefined;
  const period = opts.valFraction > 0 ? Math.max(1, Math.round(1 / opts.valFraction)) : Infinity;
  const counts = { train: { documents: 0, tokens: 0 }, val: { documents: 0, tokens: 0 } };
  let documentIndex = 0;
  let bytesBefore = 0; // the bytes of the inputs already finished
  let bytesRead = 0;
  const batch: { text: string; last: boolean; split: 'train' | 'val' }[] = [];
  let batchChars = 0;

  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const ids = await tokenizer.encodeBatch(batch.map((b) => b.text));
    batch.forEach((piece, i) => {
      const out = ids[i] ?? [];
      if (piece.last) out.push(tokenizer.eos.id);
      (piece.split === 'val' && val ? val : train).append(out);
      counts[piece.split].tokens += out.length;
    });
    batch.length = 0;
    batchChars = 0;
    opts.afterBatch?.();
    opts.onProgress?.({ bytesRead, bytesTotal, tokens: counts.train.tokens + counts.val.tokens, seconds: seconds() });
  };

  try {
    for (const file of opts.inputs) {
      for await (const piece of documentPieces(file, opts)) {
        opts.signal?.throwIfAborted();
        bytesRead = bytesBefore + piece.bytesRead;
        // The document's split is decided by its index, so a document never straddles the two.
        const split = (documentIndex + 1) % period === 0 && val ? 'val' : 'train';
        batch.push({ text: piece.text, last: piece.last, split });
        batchChars += piece.text.length;
        if (piece.last) {
          counts[split].documents++;
          documentIndex++;
        }
        if (batchChars >= BATCH_CHARS) await flush();
      }
      bytesBefore += statSync(file).size;
      bytesRead = bytesBefore;
    }
    await flush();
    opts.signal?.throwIfAborted();
    train.finish();
    if (val && counts.val.documents > 0) val.finish();
    else val?.abort(); // too few documents for one in every `period`: no val.tok (the stats say why)
  } catch (e) {
    train.abort();
    val?.abort();
    throw e;
  }
  const elapsed = seconds();
  const tokens = counts.train.tokens + counts.val.tokens;
  const stats: PrepareStats = {
    max_rss_bytes: process.resourceUsage().maxRSS * 1024,
    format: 'fsdp-studio/prepared-data/v1',
    tokenizer: tokenizer.name,
    vocab_size: tokenizer.vocabSize,
    dtype: train.dtype,
    eos: tokenizer.eos,
    inputs: opts.inputs,
    bytes: bytesTotal,
    seconds: Math.round(elapsed * 1000) / 1000,
    tokens_per_s: Math.round(tokens / Math.max(elapsed, 1e-9)),
    val_fraction: opts.valFraction,
    train: { file: 'train.tok', ...counts.train },
    val: { file: counts.val.documents > 0 ? 'val.tok' : null, ...counts.val },
  };
  writeFileSync(path.join(opts.outDir, 'stats.json'), `${JSON.stringify(stats, null, 2)}\n`);
  return stats;
}
