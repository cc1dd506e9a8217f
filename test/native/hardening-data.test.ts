// Issue 19, item 1, through the real CLI and trainer: token files whose ids are at or beyond the
// model's vocabulary (behind an honest-looking header), a header vocabulary of 0, and a FIFO as
// data.train are refused with the file's name — never a crash, a hang, or a run that "completes"
// on corrupted memory.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeTokenFile } from '../../core/data/token-file';
import { readRun, sampleData, smallConfig, tempDir, train, writeConfig } from './train-runs';

/** The sample training tokens with `id` planted at `at`, the header still saying vocabulary `vocab`. */
function plantedTokenFile(file: string, id: number, at: number, vocab = 256): void {
  const tokens = new Uint16Array(20_000);
  const sample = readFileSync(path.join(sampleData, 'fortunes-byte-train.tok'));
  for (let i = 0; i < tokens.length; i++) tokens[i] = sample.readUInt16LE(64 + 2 * i);
  tokens[at] = id;
  const bytes = encodeTokenFile(tokens, 65536, 'byte');
  bytes.writeUInt32LE(vocab, 24); // the header lies; its checksum covers the tokens only
  writeFileSync(file, bytes);
}

describe('fsdp-train: token files are not trusted', function () {
  this.timeout(120_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('hardening-data')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  for (const id of [65535, 256, 300, 1000]) {
    it(`refuses a token id of ${id} with a vocabulary of 256, naming the file and the token (no crash, no "completed")`, async () => {
      const data = path.join(dir, 'planted.tok');
      plantedTokenFile(data, id, 12_345);
      const runDir = path.join(dir, 'run');
      const r = await train([writeConfig(dir, smallConfig({ data: { train: data, val: undefined } })), '--run-dir', runDir]);
      assert.equal(r.signal, null);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: token 12345 is id ${id}, not below the vocabulary size 256`));
      const { manifest, events } = await readRun(runDir);
      assert.equal(manifest.status, 'failed');
      const end = events.at(-1);
      assert.ok(end?.type === 'run_end' && end.status === 'failed' && end.reason?.includes('token 12345'), JSON.stringify(end));
    });
  }

  it('refuses a header vocabulary of 0 before training, naming data.train and the file (exit 2)', async () => {
    const data = path.join(dir, 'zero.tok');
    plantedTokenFile(data, 5, 0, 0);
    const r = await train([writeConfig(dir, smallConfig({ data: { train: data, val: undefined } })), '--run-dir', path.join(dir, 'run')]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /data\.train: .*zero\.tok: the header's vocabulary size is 0/);
  });

  it('refuses a FIFO as data.train at once instead of waiting for a writer', async () => {
    const fifo = path.join(dir, 'train.tok');
    execFileSync('mkfifo', [fifo]);
    const started = Date.now();
    const r = await train([writeConfig(dir, smallConfig({ data: { train: fifo, val: undefined } })), '--run-dir', path.join(dir, 'run')]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /data\.train: .*train\.tok: is a FIFO, not a regular file/);
    assert.ok(Date.now() - started < 60_000);
  });
});
