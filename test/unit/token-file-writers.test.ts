// Issue 26, item 3: every writer of token files writes a new file and renames it over the old one.
// Rewritten in place (samples/prepare-data.ts used writeFile), a file a trainer was reading was
// truncated under it (SIGBUS when it was mapped). Renamed, the reader keeps the file it opened.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeTokenFile, encodeTokenFile, TOKEN_FILE_HEADER_BYTES, writeTokenFile } from '../../core/data/token-file';

const root = path.resolve(__dirname, '../..');

/** Opens `file`, lets `rewrite` write it again, then reads what the open descriptor sees. */
function readThroughOpenDescriptor(file: string, rewrite: () => void): { before: number; after: number; seen: Buffer } {
  const before = statSync(file).ino;
  const fd = openSync(file, 'r');
  try {
    rewrite();
    const seen = Buffer.alloc(fstatSync(fd).size + 4096); // the size of the file the descriptor has open
    const n = readSync(fd, seen, 0, seen.length, 0);
    return { before, after: statSync(file).ino, seen: seen.subarray(0, n) };
  } finally {
    closeSync(fd);
  }
}

describe('writers of token files replace them by rename', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-token-writers-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const old = Uint16Array.from({ length: 5000 }, (_, i) => i % 256);
  const replacement = Uint16Array.from([1, 2, 3]);

  it('core/data/token-file.ts writeTokenFile (samples/prepare-data.ts): a reader of the old file keeps it whole', () => {
    const file = path.join(dir, 'train.tok');
    writeTokenFile(file, old, 256, 'byte');
    const r = readThroughOpenDescriptor(file, () => writeTokenFile(file, replacement, 256, 'byte'));
    assert.notEqual(r.after, r.before, 'a new file, not the old one rewritten');
    assert.deepEqual([...decodeTokenFile(r.seen).tokens], [...old]);
    assert.deepEqual([...decodeTokenFile(readFileSync(file)).tokens], [1, 2, 3]);
    assert.deepEqual(readdirSync(dir), ['train.tok'], 'no temporary file left');
  });

  it('scripts/gpu/runs.py write_token_ids (the GPU scripts): the same', () => {
    const file = path.join(dir, 'train.tok');
    const write = (count: number) => {
      const r = spawnSync(
        'python3',
        [
          '-c',
          `import sys; sys.path.insert(0, ${JSON.stringify(path.join(root, 'scripts', 'gpu'))}); from pathlib import Path; from runs import write_token_ids; write_token_ids(Path(sys.argv[1]), [i % 256 for i in range(int(sys.argv[2]))], 256, "byte")`,
          file,
          String(count),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
    };
    write(5000);
    const r = readThroughOpenDescriptor(file, () => write(3));
    assert.notEqual(r.after, r.before);
    assert.equal(r.seen.length, TOKEN_FILE_HEADER_BYTES + 2 * 5000);
    assert.deepEqual(readFileSync(file), encodeTokenFile(Uint16Array.from([0, 1, 2]), 256, 'byte'));
    assert.deepEqual(readdirSync(dir), ['train.tok']);
  });
});
