// Issue 19, item 2, through the real server over stdio: a large document is checked on a worker
// thread while the server answers about other documents; a 100,000-key one's diagnostics are the first
// 1,000 problems and a count; a 10,000-deep JSON file gets a diagnostic instead of silence; and the
// runtime's own check of a run config whose data.train is a FIFO answers instead of hanging.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LARGE_DOCUMENT_CHARS } from '../../language-server/background-checks';
import { recordDuration } from '../harness/durations';
import { largeConfig } from '../harness/large-configs';
import { fileUri, LanguageServerClient } from './harness/language-server-client';

const small = `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: /nowhere/train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
fsdp:
  sharding_strategy: FULL_SHRAD
`;

describe('language server over stdio: large, deep and hostile documents', function () {
  this.timeout(300_000);
  let server: LanguageServerClient;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-lsp-large-'));
    server = await LanguageServerClient.start();
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers about other documents while a large document's check is held up, then answers the large one", async () => {
    // The large document's check is held by the test, not raced against: a launch spec over 64 KiB
    // (the large lane) whose script is a FIFO nobody writes yet, a slow disk this test controls. Its
    // check cannot end before the test writes the FIFO, so whatever the machine's load, the small
    // document's answers below come while it is still under way: they do not wait on it.
    const fifo = path.join(dir, 'held-train.py');
    execFileSync('mkfifo', [fifo]);
    const padding = '# a long launch spec\n'.repeat(Math.ceil((LARGE_DOCUMENT_CHARS + 1) / 21));
    const held = `${padding}name: held\ncommand: python held-train.py\n`;
    assert.ok(held.length > LARGE_DOCUMENT_CHARS);
    let heldAnswered = false;
    const heldDiagnostics = server
      .open(fileUri(path.join(dir, 'held.fsdp-launch.yaml')), held, 'yaml', 240_000)
      .then((d) => ((heldAnswered = true), d));
    const smallDiagnostics = await server.open('file:///large/small.fsdp.yaml', small);
    assert.ok(
      smallDiagnostics.some((d) => String(d.message).includes('did you mean "FULL_SHARD"')),
      JSON.stringify(smallDiagnostics),
    );
    const items = await server.completion('file:///large/small.fsdp.yaml', { line: 4, character: 2 });
    assert.ok(
      items.some((i) => i.label === 'cpu_offload'),
      'completion answered',
    );
    const hover = await server.hover('file:///large/small.fsdp.yaml', { line: 4, character: 5 });
    assert.match(JSON.stringify(hover), /fsdp\.sharding_strategy/);
    assert.equal(heldAnswered, false, 'the held check ended before its script could be read');
    // Now the script can be read. The analysis reads it more than once (the launch check, then the
    // memory estimate's look for TrainingArguments): this end of the FIFO lets the read under way
    // finish, and a regular file in its place serves every later one.
    const script = 'print("training")\n';
    const writer = openSync(fifo, constants.O_RDWR); // Linux: never waits for a reader
    writeFileSync(`${fifo}.tmp`, script);
    renameSync(`${fifo}.tmp`, fifo);
    writeSync(writer, script);
    closeSync(writer);
    const d = await heldDiagnostics;
    assert.deepEqual(
      d.filter((x) => x.code === 'launch.script'),
      [],
      'the script was read once written',
    );
    assert.ok(server.alive);
  });

  it("shows a 100,000-key document's first 1,000 problems and a count", async () => {
    const big = largeConfig('deepspeed-unknown-keys', 100_000);
    const started = Date.now();
    const d = await server.open('file:///large/ds_config.json', big.text, 'json', 240_000);
    recordDuration('large-documents: diagnostics of a 100,000-key DeepSpeed config', started);
    assert.equal(d.length, 1001);
    assert.match(String(d[0].message), /^unknown_key_0: unknown key "unknown_key_0" \(DeepSpeed/);
    assert.match(
      String(d[1000].message),
      /^99,000 more problems not shown \(schema\.unknown-key\); only the first 1,000 are listed$/,
    );
    assert.ok(server.alive);
  });

  it('gives a 10,000-deep JSON file a diagnostic where the nesting passes the limit', async () => {
    const text = '{"train_batch_size": 8, "x": ' + '{"a": '.repeat(10_000) + '1' + '}'.repeat(10_000) + '}';
    const d = await server.open('file:///large/deep/ds_config.json', text, 'json');
    assert.deepEqual(
      d.map((x) => [x.message, x.range.start.line]),
      [['nested more than 200 levels deep: no config is, and the file is not read further', 0]],
    );
    assert.equal(d[0].range.start.character, 29 + 6 * 199);
  });

  it('checks a run config whose data.train is a FIFO without waiting on it, and says what the file is', async () => {
    const fifo = path.join(dir, 'train.tok');
    execFileSync('mkfifo', [fifo]);
    const text = small.replace('/nowhere/train.tok', JSON.stringify(fifo)).replace('FULL_SHRAD', 'FULL_SHARD');
    const d = await server.open(fileUri(path.join(dir, 'fifo.fsdp.yaml')), text);
    const runtime = d.filter((x) => x.code === 'run.runtime');
    assert.equal(runtime.length, 1, JSON.stringify(d));
    assert.match(
      String(runtime[0].message),
      /the runtime rejects this config: data\.train: .*train\.tok: is a FIFO, not a regular file/,
    );
  });
});
