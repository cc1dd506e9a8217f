import assert from 'node:assert/strict';
import { decodeTokenFile, encodeTokenFile, unigramEntropy } from '../../core/data/token-file';

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

  it('computes unigram entropy in nats', () => {
    assert.equal(unigramEntropy(Uint16Array.from([1, 1, 1, 1])), 0);
    assert.ok(Math.abs(unigramEntropy(Uint16Array.from([1, 2, 3, 4])) - Math.log(4)) < 1e-12);
  });
});
