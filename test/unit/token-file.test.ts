import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  decodeTokenFile,
  dtypeForVocabulary,
  encodeTokenFile,
  TokenFileWriter,
  unigramEntropy,
} from '../../core/data/token-file';

describe('token files', () => {
  const tokens = Uint16Array.from([5, 0, 255, 17, 5, 5]);

  it('round-trips tokens, vocab size and tokenizer name', () => {
    const { header, tokens: back } = decodeTokenFile(encodeTokenFile(tokens, 256, 'byte'));
    assert.deepEqual([...back], [...tokens]);
    assert.equal(header.vocabSize, 256);
    assert.equal(header.tokenizer, 'byte');
    assert.equal(header.tokenCount, 6);
  });

  it('detects truncation, corruption and a wrong magic', () => {
    const bytes = encodeTokenFile(tokens, 256, 'byte');
    assert.throws(() => decodeTokenFile(bytes.subarray(0, bytes.length - 1), 'x.tok'), /x.tok: .*truncated/);
    const flipped = Buffer.from(bytes);
    flipped[flipped.length - 1] ^= 1;
    assert.throws(() => decodeTokenFile(flipped, 'x.tok'), /checksum mismatch/);
    const magic = Buffer.from(bytes);
    magic[0] = 0;
    assert.throws(() => decodeTokenFile(magic), /bad magic/);
  });

  it('reports a file cut short inside its header as truncated, not as a bad magic (issue 26, item 7)', () => {
    const bytes = encodeTokenFile(tokens, 256, 'byte');
    assert.throws(() => decodeTokenFile(bytes.subarray(0, 40), 'x.tok'), {
      message: 'x.tok: 40 bytes, shorter than the 64-byte header of a token file (truncated)',
    });
    assert.throws(() => decodeTokenFile(Buffer.alloc(40, 'x'), 'x.tok'), {
      message: 'x.tok: not a token file (bad magic)',
    });
  });

  it('refuses tokens outside the vocabulary', () => {
    assert.throws(() => encodeTokenFile(Uint16Array.from([300]), 256, 'byte'), /token 300 at index 0/);
  });

  it('holds ids past 65,535 as 32-bit tokens, the dtype field saying so', () => {
    assert.equal(dtypeForVocabulary(65_536), 'uint16');
    assert.equal(dtypeForVocabulary(128_256), 'uint32'); // Llama 3's vocabulary
    const big = Uint32Array.from([0, 65_535, 65_536, 128_255]);
    const bytes = encodeTokenFile(big, 128_256, 'llama3');
    assert.equal(bytes.readUInt32LE(12), 2);
    assert.equal(bytes.length, 64 + 4 * big.length);
    const { header, tokens: back } = decodeTokenFile(bytes);
    assert.equal(header.dtype, 'uint32');
    assert.deepEqual([...back], [...big]);
    const wrong = Buffer.from(bytes);
    wrong.writeUInt32LE(7, 12);
    assert.throws(() => decodeTokenFile(wrong, 'x.tok'), /x.tok: unsupported dtype 7 \(1 = uint16, 2 = uint32/);
  });

  it('streams: ids appended in pieces make the same file as one write; an abort leaves the old file alone', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'token-writer-'));
    try {
      const file = path.join(dir, 'train.tok');
      const writer = new TokenFileWriter(file, { vocabSize: 128_256, tokenizer: 'llama3' });
      writer.append([1, 2, 70_000]);
      writer.append(Uint32Array.from([5]));
      writer.finish();
      assert.deepEqual(readFileSync(file), encodeTokenFile(Uint32Array.from([1, 2, 70_000, 5]), 128_256, 'llama3'));
      writeFileSync(file, 'old');
      const cut = new TokenFileWriter(file, { vocabSize: 256, tokenizer: 'byte' });
      cut.append([1, 2, 3]);
      assert.throws(() => cut.append([256]), /token 256 at index 3 is not below vocab size 256/);
      cut.abort();
      assert.equal(readFileSync(file, 'utf8'), 'old');
      assert.deepEqual(readdirSync(dir), ['train.tok']); // no temporary left behind
      assert.throws(
        () => new TokenFileWriter(file, { vocabSize: 70_000, tokenizer: 'x', dtype: 'uint16' }),
        /70000 does not fit 16-bit/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('computes unigram entropy in nats', () => {
    assert.equal(unigramEntropy(Uint16Array.from([1, 1, 1, 1])), 0);
    assert.ok(Math.abs(unigramEntropy(Uint16Array.from([1, 2, 3, 4])) - Math.log(4)) < 1e-12);
  });
});
