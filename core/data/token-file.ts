// Token files: the runtime's training data format (native/FORMATS.md). This is the TypeScript
// side, used by the data preparation (samples/prepare-data.ts, `fsdp-train prepare`) and by tests;
// the native loader reads the same bytes.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';

export const TOKEN_FILE_MAGIC = Buffer.from('FSDPTOK\0', 'latin1');
export const TOKEN_FILE_VERSION = 1;
export const TOKEN_FILE_HEADER_BYTES = 64;
/** The header's dtype field: 16-bit ids while the vocabulary fits them, 32-bit past 65,536. */
export const TOKEN_DTYPES = { uint16: 1, uint32: 2 } as const;
export type TokenDtype = keyof typeof TOKEN_DTYPES;
const BYTES_PER_TOKEN: Record<TokenDtype, number> = { uint16: 2, uint32: 4 };

export type TokenIds = Uint16Array | Uint32Array;

export interface TokenFileHeader {
  version: number;
  dtype: TokenDtype;
  tokenCount: number;
  vocabSize: number;
  crc32: number;
  tokenizer: string;
}

/** The narrowest dtype whose ids hold every id below `vocabSize`. */
export function dtypeForVocabulary(vocabSize: number): TokenDtype {
  return vocabSize <= 0x10000 ? 'uint16' : 'uint32';
}

export function encodeTokenFile(tokens: TokenIds, vocabSize: number, tokenizer: string): Buffer {
  const dtype: TokenDtype = tokens instanceof Uint32Array ? 'uint32' : 'uint16';
  checkIds(tokens, vocabSize, 0);
  const payload = Buffer.from(tokens.buffer, tokens.byteOffset, tokens.byteLength);
  return Buffer.concat([tokenFileHeader(dtype, tokens.length, vocabSize, crc32(payload), tokenizer), payload]);
}

/**
 * Writes a token file as a new file renamed over `file`: a trainer reading the old one keeps
 * reading it, whole (the runtime refuses a file rewritten in place under it, naming it), and a
 * crash mid-write leaves the old file, not half a new one.
 */
export function writeTokenFile(file: string, tokens: TokenIds, vocabSize: number, tokenizer: string): void {
  const writer = new TokenFileWriter(file, {
    vocabSize,
    tokenizer,
    dtype: tokens instanceof Uint32Array ? 'uint32' : 'uint16',
  });
  try {
    writer.append(tokens);
    writer.finish();
  } catch (e) {
    writer.abort();
    throw e;
  }
}

/**
 * The one writer of token files, streaming: ids are appended in pieces (a corpus larger than memory
 * never is whole in it), the checksum is carried along, and the header is written last. Until
 * finish() the bytes are in a temporary file beside `file`; abort() (or a crash) leaves `file` as
 * it was, so an interrupted preparation never leaves half a token file under the real name.
 */
export class TokenFileWriter {
  private readonly tmp: string;
  private fd: number | undefined;
  private crc = 0;
  private count = 0;
  readonly dtype: TokenDtype;

  constructor(
    private readonly file: string,
    private readonly opts: { vocabSize: number; tokenizer: string; dtype?: TokenDtype },
  ) {
    this.dtype = opts.dtype ?? dtypeForVocabulary(opts.vocabSize);
    if (this.dtype === 'uint16' && opts.vocabSize > 0x10000)
      throw new Error(`a vocabulary of ${opts.vocabSize} does not fit 16-bit token ids (at most 65,536)`);
    tokenFileHeader(this.dtype, 0, opts.vocabSize, 0, opts.tokenizer); // checks the name before any file exists
    this.tmp = path.join(
      path.dirname(file),
      `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`,
    );
    this.fd = openSync(this.tmp, 'wx');
    writeAll(this.fd, Buffer.alloc(TOKEN_FILE_HEADER_BYTES), 0);
  }

  /** Ids written so far. */
  get tokenCount(): number {
    return this.count;
  }

  append(ids: ArrayLike<number>): void {
    if (this.fd === undefined) throw new Error(`${this.file}: the token file was already finished or aborted`);
    const typed = this.dtype === 'uint16' ? Uint16Array.from(ids) : Uint32Array.from(ids);
    checkIds(typed, this.opts.vocabSize, this.count);
    const bytes = Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
    writeAll(this.fd, bytes, TOKEN_FILE_HEADER_BYTES + this.count * BYTES_PER_TOKEN[this.dtype]);
    this.crc = crc32(bytes, this.crc);
    this.count += typed.length;
  }

  /** Writes the header, flushes, and renames the file into place. */
  finish(): void {
    if (this.fd === undefined) throw new Error(`${this.file}: the token file was already finished or aborted`);
    const fd = this.fd;
    writeAll(fd, tokenFileHeader(this.dtype, this.count, this.opts.vocabSize, this.crc, this.opts.tokenizer), 0);
    fsyncSync(fd);
    closeSync(fd);
    this.fd = undefined;
    renameSync(this.tmp, this.file);
  }

  /** Removes the temporary file; `file` is left as it was. Safe to call more than once. */
  abort(): void {
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {
        // already closed
      }
      this.fd = undefined;
    }
    rmSync(this.tmp, { force: true });
  }
}

function tokenFileHeader(dtype: TokenDtype, count: number, vocabSize: number, crc: number, tokenizer: string): Buffer {
  if (tokenizer.length > 16 || !/^[\x20-\x7e]*$/.test(tokenizer))
    throw new Error(`tokenizer name must be at most 16 ASCII characters: ${tokenizer}`);
  const header = Buffer.alloc(TOKEN_FILE_HEADER_BYTES);
  TOKEN_FILE_MAGIC.copy(header, 0);
  header.writeUInt32LE(TOKEN_FILE_VERSION, 8);
  header.writeUInt32LE(TOKEN_DTYPES[dtype], 12);
  header.writeBigUInt64LE(BigInt(count), 16);
  header.writeUInt32LE(vocabSize, 24);
  header.writeUInt32LE(crc, 28);
  header.write(tokenizer, 32, 'latin1');
  return header;
}

function checkIds(tokens: TokenIds, vocabSize: number, offset: number): void {
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i] >= vocabSize)
      throw new Error(`token ${tokens[i]} at index ${offset + i} is not below vocab size ${vocabSize}`);
  }
}

function writeAll(fd: number, bytes: Buffer, position: number): void {
  for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
}

/** Reads and verifies a token file; throws an Error naming what is wrong. */
export function decodeTokenFile(bytes: Buffer, name = 'token file'): { header: TokenFileHeader; tokens: TokenIds } {
  // A file cut short inside its header still begins as a token file does: it is truncated.
  const present = Math.min(bytes.length, TOKEN_FILE_MAGIC.length);
  if (
    bytes.length < TOKEN_FILE_HEADER_BYTES &&
    bytes.subarray(0, present).equals(TOKEN_FILE_MAGIC.subarray(0, present))
  ) {
    throw new Error(
      `${name}: ${bytes.length} bytes, shorter than the ${TOKEN_FILE_HEADER_BYTES}-byte header of a token file (truncated)`,
    );
  }
  if (bytes.length < TOKEN_FILE_HEADER_BYTES || !bytes.subarray(0, 8).equals(TOKEN_FILE_MAGIC)) {
    throw new Error(`${name}: not a token file (bad magic)`);
  }
  const version = bytes.readUInt32LE(8);
  if (version !== TOKEN_FILE_VERSION) throw new Error(`${name}: unsupported version ${version}`);
  const dtypeCode = bytes.readUInt32LE(12);
  const dtype = (Object.keys(TOKEN_DTYPES) as TokenDtype[]).find((d) => TOKEN_DTYPES[d] === dtypeCode);
  if (dtype === undefined)
    throw new Error(`${name}: unsupported dtype ${dtypeCode} (1 = uint16, 2 = uint32 token ids)`);
  const tokenCount = Number(bytes.readBigUInt64LE(16));
  const expected = TOKEN_FILE_HEADER_BYTES + BYTES_PER_TOKEN[dtype] * tokenCount;
  if (bytes.length !== expected)
    throw new Error(`${name}: ${bytes.length} bytes, expected ${expected} for ${tokenCount} tokens (truncated?)`);
  const payload = bytes.subarray(TOKEN_FILE_HEADER_BYTES);
  const stored = bytes.readUInt32LE(28);
  if (crc32(payload) !== stored) throw new Error(`${name}: checksum mismatch (corrupted)`);
  const tokenizer = bytes.subarray(32, 48).toString('latin1').replace(/\0+$/, '');
  const aligned = dtype === 'uint16' ? new Uint16Array(tokenCount) : new Uint32Array(tokenCount);
  Buffer.from(aligned.buffer).set(payload);
  return {
    header: { version, dtype, tokenCount, vocabSize: bytes.readUInt32LE(24), crc32: stored, tokenizer },
    tokens: aligned,
  };
}

/** Entropy of the unigram distribution of `tokens`, in nats per token. */
export function unigramEntropy(tokens: TokenIds): number {
  const counts = new Map<number, number>();
  for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) {
    const p = c / tokens.length;
    h -= p * Math.log(p);
  }
  return h;
}
