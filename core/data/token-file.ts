// Token files: the runtime's training data format (native/FORMATS.md). This is the TypeScript
// side, used by the data preparation script and by tests; the native loader reads the same bytes.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';

export const TOKEN_FILE_MAGIC = Buffer.from('FSDPTOK\0', 'latin1');
export const TOKEN_FILE_VERSION = 1;
export const TOKEN_FILE_HEADER_BYTES = 64;
const DTYPE_UINT16 = 1;

export interface TokenFileHeader {
  version: number;
  tokenCount: number;
  vocabSize: number;
  crc32: number;
  tokenizer: string;
}

export function encodeTokenFile(tokens: Uint16Array, vocabSize: number, tokenizer: string): Buffer {
  if (tokenizer.length > 16 || !/^[\x20-\x7e]*$/.test(tokenizer))
    throw new Error(`tokenizer name must be at most 16 ASCII characters: ${tokenizer}`);
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i] >= vocabSize)
      throw new Error(`token ${tokens[i]} at index ${i} is not below vocab size ${vocabSize}`);
  }
  const payload = Buffer.from(tokens.buffer, tokens.byteOffset, tokens.byteLength);
  const header = Buffer.alloc(TOKEN_FILE_HEADER_BYTES);
  TOKEN_FILE_MAGIC.copy(header, 0);
  header.writeUInt32LE(TOKEN_FILE_VERSION, 8);
  header.writeUInt32LE(DTYPE_UINT16, 12);
  header.writeBigUInt64LE(BigInt(tokens.length), 16);
  header.writeUInt32LE(vocabSize, 24);
  header.writeUInt32LE(crc32(payload), 28);
  header.write(tokenizer, 32, 'latin1');
  return Buffer.concat([header, payload]);
}

/**
 * Writes a token file as a new file renamed over `file`: a trainer reading the old one keeps
 * reading it, whole (the runtime refuses a file rewritten in place under it, naming it), and a
 * crash mid-write leaves the old file, not half a new one.
 */
export function writeTokenFile(file: string, tokens: Uint16Array, vocabSize: number, tokenizer: string): void {
  const bytes = encodeTokenFile(tokens, vocabSize, tokenizer);
  const tmp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  const fd = openSync(tmp, 'wx');
  try {
    for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, file);
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Reads and verifies a token file; throws an Error naming what is wrong. */
export function decodeTokenFile(bytes: Buffer, name = 'token file'): { header: TokenFileHeader; tokens: Uint16Array } {
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
  if (bytes.readUInt32LE(12) !== DTYPE_UINT16) throw new Error(`${name}: unsupported dtype ${bytes.readUInt32LE(12)}`);
  const tokenCount = Number(bytes.readBigUInt64LE(16));
  const expected = TOKEN_FILE_HEADER_BYTES + 2 * tokenCount;
  if (bytes.length !== expected)
    throw new Error(`${name}: ${bytes.length} bytes, expected ${expected} for ${tokenCount} tokens (truncated?)`);
  const payload = bytes.subarray(TOKEN_FILE_HEADER_BYTES);
  const stored = bytes.readUInt32LE(28);
  if (crc32(payload) !== stored) throw new Error(`${name}: checksum mismatch (corrupted)`);
  const tokenizer = bytes.subarray(32, 48).toString('latin1').replace(/\0+$/, '');
  const aligned = new Uint16Array(tokenCount);
  Buffer.from(aligned.buffer).set(payload);
  return {
    header: { version, tokenCount, vocabSize: bytes.readUInt32LE(24), crc32: stored, tokenizer },
    tokens: aligned,
  };
}

/** Entropy of the unigram distribution of `tokens`, in nats per token. */
export function unigramEntropy(tokens: Uint16Array): number {
  const counts = new Map<number, number>();
  for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) {
    const p = c / tokens.length;
    h -= p * Math.log(p);
  }
  return h;
}
