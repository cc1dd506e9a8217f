// The runtime's own verdict (the native addon's validateConfig, built by npm test's set-up) shown
// as diagnostics: what this machine's runtime refuses is an error, what it warns about a warning.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';

const ADDON = path.join(repoRoot, 'native', 'build', 'Release', 'fsdp_native.node');
const DATA = path.join(repoRoot, 'samples', 'data', 'fortunes-byte-train.tok');

const runnable = (extra = '') => `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: ${JSON.stringify(DATA)}}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
${extra}`;

describe("language server over stdio: the runtime's own config check", function () {
  this.timeout(60_000);
  let server: LanguageServerClient;

  before(async function () {
    assert.ok(existsSync(ADDON), `${ADDON} is missing: npm test builds it (node scripts/setup/native.mjs)`);
    assert.ok(existsSync(DATA), `${DATA} is missing: npm test prepares it (node --import tsx samples/prepare-data.ts)`);
    server = await LanguageServerClient.start({ nativeAddonPath: ADDON });
  });
  after(async () => {
    await server?.stop();
  });

  it('is on when the addon is built, and finds nothing wrong with a config this machine runs', async () => {
    assert.deepEqual(await server.open('file:///rt/ok.fsdp.yaml', runnable()), []);
    // Logged at start-up; the diagnostics round trip above has certainly delivered it.
    assert.ok(
      server.logs.some((l) => l.message === `runtime validation on: ${ADDON}`),
      JSON.stringify(server.logs),
    );
  });

  it('reports what the runtime refuses as an error at the key it names', async () => {
    // float16 is never the CPU backend's (bfloat16 is, for its matrix products, where this build and CPU run it).
    const text = runnable('mixed_precision:\n  param_dtype: float16\nlaunch:\n  device: cpu\n');
    const d = await server.open('file:///rt/f16-on-cpu.fsdp.yaml', text);
    assert.deepEqual(
      d.map((x) => [x.code, x.severity, x.range.start.line, x.range.start.character]),
      [['run.runtime', 1, 4, 15]],
    );
    assert.match(
      String(d[0].message),
      /the runtime rejects this config: mixed_precision\.param_dtype: float16 needs launch\.device: cuda/,
    );
  });

  it("reports a missing data file at data.train, resolved against the config's folder", async () => {
    const d = await server.open(
      'file:///rt/missing-data.fsdp.yaml',
      runnable().replace(JSON.stringify(DATA), 'data/none.tok'),
    );
    assert.deepEqual(
      d.map((x) => [x.code, x.severity, x.range.start.line]),
      [['run.runtime', 1, 1]],
    );
    assert.match(String(d[0].message), /data\.train: .*\/rt\/data\/none\.tok/);
  });

  it('reports what the runtime only warns about as a warning', async () => {
    const d = await server.open(
      'file:///rt/warmup.fsdp.yaml',
      runnable().replace('max_steps: 10,', 'max_steps: 10, warmup_steps: 20,'),
    );
    assert.deepEqual(
      d.map((x) => [x.code, x.severity]),
      [['run.runtime', 2]],
    );
    assert.match(String(d[0].message), /the runtime warns: training\.warmup_steps: 20 exceeds training\.max_steps/);
  });

  it("leaves runs on an SSH host to that host's runtime", async () => {
    const d = await server.open(
      'file:///rt/remote.fsdp.yaml',
      runnable('mixed_precision:\n  param_dtype: bfloat16\nlaunch:\n  target: gpu-box\n  device: cuda\n'),
    );
    assert.deepEqual(d, []);
  });
});
