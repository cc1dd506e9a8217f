// Issue 19, item 1, through the real CLI and trainer: token files whose ids are at or beyond the
// model's vocabulary (behind an honest-looking header), a header vocabulary of 0, and a FIFO as
// data.train are refused with the file's name — never a crash, a hang, or a run that "completes"
// on corrupted memory.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeTokenFile } from '../../core/data/token-file';
import { recordDuration } from '../harness/durations';
import { repoRoot } from './native-build';
import { readRun, sampleData, smallConfig, startTrain, tempDir, train, writeConfig } from './train-runs';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

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
      const r = await train([
        writeConfig(dir, smallConfig({ data: { train: data, val: undefined } })),
        '--run-dir',
        runDir,
      ]);
      assert.equal(r.signal, null);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: token 12345 is id ${id}, not below the vocabulary size 256`,
        ),
      );
      const { manifest, events } = await readRun(runDir);
      assert.equal(manifest.status, 'failed');
      const end = events.at(-1);
      assert.ok(
        end?.type === 'run_end' && end.status === 'failed' && end.reason?.includes('token 12345'),
        JSON.stringify(end),
      );
    });
  }

  it('refuses a header vocabulary of 0 before training, naming data.train and the file (exit 2)', async () => {
    const data = path.join(dir, 'zero.tok');
    plantedTokenFile(data, 5, 0, 0);
    const r = await train([
      writeConfig(dir, smallConfig({ data: { train: data, val: undefined } })),
      '--run-dir',
      path.join(dir, 'run'),
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /data\.train: .*zero\.tok: the header's vocabulary size is 0/);
  });

  it('ends a run whose token file is rewritten in place under it with an error naming the file, not SIGBUS (issue 26, item 3)', async () => {
    const data = path.join(dir, 'train.tok');
    copyFileSync(path.join(sampleData, 'fortunes-byte-train.tok'), data);
    const runDir = path.join(dir, 'run');
    let rewritten = false;
    const { done } = startTrain(
      [
        writeConfig(dir, smallConfig({ data: { train: data, val: undefined }, training: { max_steps: 100_000 } })),
        '--run-dir',
        runDir,
      ],
      (line) => {
        if (rewritten || !line.includes('"type":"step"')) return;
        rewritten = true;
        // What writeFile does: truncate the file, then write the new, shorter content.
        writeFileSync(data, encodeTokenFile(new Uint16Array(1000), 256, 'byte'));
      },
    );
    const r = await done;
    assert.ok(rewritten, r.stderr);
    assert.equal(r.signal, null);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `${escape(data)}: changed while the run was reading it \\(${statSync(path.join(sampleData, 'fortunes-byte-train.tok')).size} bytes when the run opened it, (0|2064) now\\)`,
      ),
    );
    const { manifest, events } = await readRun(runDir);
    assert.equal(manifest.status, 'failed');
    const end = events.at(-1);
    assert.ok(
      end?.type === 'run_end' &&
        end.status === 'failed' &&
        end.reason?.includes(`${data}: changed while the run was reading it`),
      JSON.stringify(end),
    );
  });

  it('keeps training on the file it opened while samples/prepare-data.ts replaces the data (issue 26, item 3)', async () => {
    // Two small corpora of 150 fortunes each, so the second data set differs (and is shorter).
    const corpus = (name: string, words: number) => {
      const folder = path.join(dir, name);
      mkdirSync(folder);
      writeFileSync(
        path.join(folder, 'quotes'),
        Array.from({ length: 150 }, (_, i) => `${'word '.repeat(words)}${name} ${i}\n`).join('%\n'),
      );
      return folder;
    };
    const out = path.join(dir, 'data');
    const prepare = (from: string) => {
      const p = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(repoRoot, 'samples', 'prepare-data.ts'),
          '--tokenizer',
          'byte',
          '--out',
          out,
          '--corpus',
          from,
        ],
        { cwd: repoRoot, encoding: 'utf8' },
      );
      assert.equal(p.status, 0, p.stderr);
    };
    prepare(corpus('long', 60));
    const data = path.join(out, 'fortunes-byte-train.tok');
    const inode = statSync(data).ino;
    const runDir = path.join(dir, 'run');
    let stepsAfter = 0;
    let state: 'training' | 'replaced' | 'stopping' = 'training';
    const { done } = startTrain(
      [
        writeConfig(dir, smallConfig({ data: { train: data, val: undefined }, training: { max_steps: 100_000 } })),
        '--run-dir',
        runDir,
      ],
      (line, c) => {
        if (!line.includes('"type":"step"')) return;
        if (state === 'training') {
          prepare(corpus('short', 3)); // synchronous: the trainer's output waits in the pipe meanwhile
          state = 'replaced';
        } else if (state === 'replaced' && ++stepsAfter >= 5) {
          state = 'stopping';
          c.kill('SIGINT');
        }
      },
    );
    const r = await done;
    assert.equal(state, 'stopping', r.stderr);
    assert.notEqual(statSync(data).ino, inode, 'prepare-data wrote a new file and renamed it');
    assert.equal(r.code, 130, r.stderr);
    const { events } = await readRun(runDir);
    const end = events.at(-1);
    assert.ok(end?.type === 'run_end' && end.status === 'stopped', JSON.stringify(end));
  });

  it('refuses a FIFO as data.train at once instead of waiting for a writer', async () => {
    const fifo = path.join(dir, 'train.tok');
    execFileSync('mkfifo', [fifo]);
    const started = Date.now();
    const r = await train([
      writeConfig(dir, smallConfig({ data: { train: fifo, val: undefined } })),
      '--run-dir',
      path.join(dir, 'run'),
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /data\.train: .*train\.tok: is a FIFO, not a regular file/);
    // No writer ever opens the FIFO, so a reader waiting for one would hang to mocha's timeout: that
    // it answered at all is the condition. How long it took goes to the benchmark.
    recordDuration('hardening-data: refusal of a FIFO as data.train', started);
  });
});
