// The documents of a person's own text, read as a stream: `fsdp-train prepare` never holds a whole
// input in memory (a corpus may be larger than RAM), only a piece of one document at a time.
//   .txt    one document per file, its text exactly (--txt-unit paragraph: blank-line separated; line: one per line)
//   .jsonl  one document per record: its `text` field (or --field NAME)
//   .parquet one document per row: its `text` column (or --field NAME), read a row group at a time
//            (hyparquet, a Parquet reader in plain JavaScript: uncompressed and Snappy pages, which
//            pyarrow, pandas and Hugging Face datasets write by default)
// A document is yielded as one or more pieces of text; the tokenizer sees each piece whole, and the
// end-of-text token goes after a document's last piece.
import { createReadStream, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';

export type TxtUnit = 'file' | 'paragraph' | 'line';

export interface DocumentOptions {
  /** The JSON Lines field that holds a record's text. */
  field: string;
  txtUnit: TxtUnit;
}

export interface TextPiece {
  text: string;
  /** This piece ends its document (the end-of-text token follows it). */
  last: boolean;
  /** The input's bytes read so far, for progress. */
  bytesRead: number;
}

/** Longest line a .jsonl record or a .txt line may have: a bound on what one read holds. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;
/** A .txt document (file or paragraph) is tokenized in pieces of about this size, split at a line end. */
const PIECE_BYTES = 256 * 1024;
const EXTENSIONS = ['.txt', '.jsonl', '.parquet'];

/** The input files of the arguments (files as given, folders walked for .txt / .jsonl, sorted). */
export function inputFiles(args: string[]): string[] {
  const found: string[] = [];
  const walk = (p: string, named: boolean): void => {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st) throw new Error(`${p}: no such file or folder`);
    if (st.isDirectory()) {
      for (const name of readdirSync(p).sort()) walk(path.join(p, name), false);
    } else if (st.isFile()) {
      const ext = path.extname(p).toLowerCase();
      if (EXTENSIONS.includes(ext)) found.push(p);
      else if (named) throw new Error(`${p}: not a file prepare reads (${EXTENSIONS.join(', ')})`);
    } else if (named) {
      throw new Error(`${p}: not a regular file or a folder`);
    }
  };
  for (const a of args) walk(a, true);
  if (found.length === 0) throw new Error(`no ${EXTENSIONS.join(' or ')} files in ${args.join(', ')}`);
  return found;
}

/** The pieces of every document of `file`, in order. */
export async function* documentPieces(file: string, opts: DocumentOptions): AsyncGenerator<TextPiece> {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.jsonl') yield* jsonlDocuments(file, opts.field);
  else if (ext === '.parquet') yield* parquetDocuments(file, opts.field);
  else yield* txtDocuments(file, opts.txtUnit);
}

async function* txtDocuments(file: string, unit: TxtUnit): AsyncGenerator<TextPiece> {
  if (unit === 'file') {
    yield* wholeFile(file);
    return;
  }
  let pending = '';
  let open = false; // pieces of the current document went out already: its end must follow
  let bytesRead = 0;
  for await (const { line, bytes } of lines(file)) {
    bytesRead = bytes;
    if (unit === 'line') {
      if (line.trim() !== '') yield { text: line, last: true, bytesRead };
      continue;
    }
    if (unit === 'paragraph' && line.trim() === '') {
      if (pending.trim() !== '' || open) yield { text: pending, last: true, bytesRead };
      pending = '';
      open = false;
      continue;
    }
    pending += pending === '' && !open ? line : `\n${line}`;
    if (pending.length >= PIECE_BYTES) {
      // A long document goes to the tokenizer in pieces split at a line end.
      yield { text: pending, last: false, bytesRead };
      pending = '';
      open = true;
    }
  }
  if (pending.trim() !== '' || open) yield { text: pending, last: true, bytesRead };
}

/** A file as one document, its text exactly (line ends and all), in pieces split after a line end. */
async function* wholeFile(file: string): AsyncGenerator<TextPiece> {
  let carry = Buffer.alloc(0);
  let bytesRead = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: PIECE_BYTES })) {
    bytesRead += (chunk as Buffer).length;
    const buf = carry.length ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
    // Split after the last line end: a UTF-8 character never straddles two pieces, nor (mostly) a word.
    const end = buf.lastIndexOf(10) + 1;
    if (end > 0) yield { text: buf.toString('utf8', 0, end), last: false, bytesRead };
    carry = Buffer.from(buf.subarray(end));
    if (carry.length > MAX_LINE_BYTES)
      throw new Error(`${file}: more than ${MAX_LINE_BYTES / (1024 * 1024)} MiB without a line end`);
  }
  yield { text: carry.toString('utf8'), last: true, bytesRead };
}

async function* jsonlDocuments(file: string, field: string): AsyncGenerator<TextPiece> {
  let lineNo = 0;
  for await (const { line, bytes } of lines(file)) {
    lineNo++;
    if (line.trim() === '') continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (e) {
      throw new Error(`${file}:${lineNo}: not a JSON record (${(e as Error).message})`, { cause: e });
    }
    const text = typeof record === 'object' && record !== null ? (record as Record<string, unknown>)[field] : undefined;
    if (typeof text !== 'string') {
      const keys = typeof record === 'object' && record !== null ? Object.keys(record).slice(0, 8).join(', ') : '';
      throw new Error(
        `${file}:${lineNo}: the record has no string field "${field}"${keys ? ` (its fields: ${keys})` : ''}; name the field with --field`,
      );
    }
    yield { text, last: true, bytesRead: bytes };
  }
}

async function* parquetDocuments(file: string, field: string): AsyncGenerator<TextPiece> {
  const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } = await import('hyparquet');
  const buffer = await asyncBufferFromFile(file);
  let metadata;
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (e) {
    throw new Error(`${file}: not a Parquet file hyparquet reads (${(e as Error).message})`, { cause: e });
  }
  const columns = metadata.schema.slice(1).map((c) => c.name);
  if (!columns.includes(field))
    throw new Error(
      `${file}: no column "${field}" (its columns: ${columns.slice(0, 8).join(', ')}); name the column with --field`,
    );
  const total = Number(metadata.num_rows);
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    let rows: Record<string, unknown>[];
    try {
      rows = await parquetReadObjects({ file: buffer, metadata, columns: [field], rowStart, rowEnd });
    } catch (e) {
      throw new Error(`${file}: rows ${rowStart}–${rowEnd - 1} cannot be read (${(e as Error).message})`, {
        cause: e,
      });
    }
    for (const [i, row] of rows.entries()) {
      const text = row[field];
      if (typeof text !== 'string') {
        if (text === null || text === undefined) continue; // a missing value is no document
        throw new Error(`${file}: row ${rowStart + i}: column "${field}" holds ${typeof text}, not text`);
      }
      // Progress by rows, in the file's bytes.
      yield { text, last: true, bytesRead: Math.round((buffer.byteLength * (rowStart + i + 1)) / Math.max(total, 1)) };
    }
    rowStart = rowEnd;
  }
}

/** The lines of a file (without their line ends) and the bytes read through each, never more than MAX_LINE_BYTES held. */
async function* lines(file: string): AsyncGenerator<{ line: string; bytes: number }> {
  let carry = Buffer.alloc(0);
  let consumed = 0;
  let lineNo = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    let buf = carry.length ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      lineNo++;
      consumed += nl + 1 - start;
      yield { line: stripCr(buf.toString('utf8', start, nl)), bytes: consumed };
      start = nl + 1;
    }
    buf = buf.subarray(start);
    if (buf.length > MAX_LINE_BYTES)
      throw new Error(`${file}: line ${lineNo + 1} is longer than ${MAX_LINE_BYTES / (1024 * 1024)} MiB`);
    carry = Buffer.from(buf);
  }
  if (carry.length) {
    consumed += carry.length;
    yield { line: stripCr(carry.toString('utf8')), bytes: consumed };
  }
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
