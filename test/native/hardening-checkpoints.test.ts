// Issue 19, item 9, through the real CLI and trainer: a checkpoint whose manifest names files
// outside its folder, holds a FIFO in place of a state file, claims step 10^18, or whose metadata
// is not JSON is refused with the file's name and exit code 1 — never opened outside the folder,
// never a hang, never "completed".
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { recordDuration } from '../harness/durations';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

interface Manifest {
  step: number;
  files: Array<{ name: string; rank: number; bytes: number; crc32: number }>;
}

describe('fsdp-train: checkpoint contents are not trusted', function () {
  this.timeout(180_000);
  let dir: string;
  let config: string;
  let checkpoint: string;
  let manifestPath: string;
  let manifest: string;
  let stateFile: Buffer;

  before(async () => {
    dir = tempDir('hardening-checkpoints');
    config = writeConfig(dir, smallConfig({ training: { max_steps: 4 }, checkpointing: { save_every_n_steps: 2 } }));
    const r = await train([config, '--run-dir', path.join(dir, 'source')]);
    assert.equal(r.code, 0, r.stderr);
    checkpoint = path.join(dir, 'source', 'checkpoints', 'step-00000002');
    manifestPath = path.join(checkpoint, 'manifest.json');
    manifest = readFileSync(manifestPath, 'utf8');
    stateFile = readFileSync(path.join(checkpoint, 'rank-00000.bin'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => {
    rmSync(path.join(checkpoint, 'rank-00000.bin'), { force: true });
    writeFileSync(path.join(checkpoint, 'rank-00000.bin'), stateFile);
    writeFileSync(manifestPath, manifest);
  });

  async function resumeFails(expected: RegExp, name: string): Promise<void> {
    const runDir = path.join(dir, name);
    const started = Date.now();
    const r = await train([config, '--run-dir', runDir, '--resume', checkpoint]);
    assert.equal(r.signal, null);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, expected);
    // "Never a hang" is that the refusal came before any training (a hang would end at mocha's
    // timeout); how long it took is a benchmark figure, not a verdict.
    recordDuration(`hardening-checkpoints: refusal of the ${name} checkpoint`, started);
    const { events, manifest: run } = await readRun(runDir);
    assert.deepEqual(eventsOf(events, 'step'), [], 'the refused checkpoint was not trained from');
    assert.equal(run.status, 'failed');
  }

  function editManifest(edit: (m: Manifest) => void): void {
    const m = JSON.parse(manifest) as Manifest;
    edit(m);
    writeFileSync(manifestPath, JSON.stringify(m));
  }

  it('refuses a manifest naming a file outside the checkpoint folder', async () => {
    editManifest((m) => (m.files[0].name = '../../../outside.bin'));
    await resumeFails(
      /manifest\.json: files\[rank 0\]\.name "\.\.\/\.\.\/\.\.\/outside\.bin" is not rank-00000\.bin/,
      'outside',
    );
    editManifest((m) => (m.files[0].name = '/etc/shadow'));
    await resumeFails(/manifest\.json: files\[rank 0\]\.name "\/etc\/shadow" is not rank-00000\.bin/, 'absolute');
  });

  it('refuses a FIFO in place of a state file at once (no hang after "run failed")', async () => {
    unlinkSync(path.join(checkpoint, 'rank-00000.bin'));
    execFileSync('mkfifo', [path.join(checkpoint, 'rank-00000.bin')]);
    await resumeFails(/rank-00000\.bin: is a FIFO, not a regular file/, 'fifo');
  });

  it('refuses step 10^18 instead of "completing" at once', async () => {
    editManifest((m) => (m.step = 1e18));
    await resumeFails(/manifest\.json: step is 1000000000000000000, outside \[0, 1000000000000\]/, 'huge-step');
  });

  it('reports metadata that is not JSON with the path of its file', async () => {
    // The meta section is the first: u16 name length, "meta", u64 byte count, the JSON.
    const bytes = Buffer.from(stateFile);
    const at = 32 + 2 + 4 + 8;
    bytes.write('{"rank": ', at, 'latin1'); // the JSON now ends inside an object
    bytes.fill(' ', at + 9, at + Number(bytes.readBigUInt64LE(32 + 2 + 4)));
    bytes.writeUInt32LE(crc32(bytes.subarray(32)), 24);
    writeFileSync(path.join(checkpoint, 'rank-00000.bin'), bytes);
    editManifest((m) => (m.files[0].crc32 = crc32(bytes)));
    await resumeFails(/rank-00000\.bin: section meta is not valid JSON: \[json\.exception\.parse_error/, 'bad-meta');
  });
});
