// Issue 26, item 1, on real processes: numbers beyond a key's range are refused, naming the key and
// the value, by the runtime itself (fsdp-train-native, which SSH hosts run directly), by fsdp-train
// and by fsdp-estimate — never read modulo 2^32 (`batch_size_per_gpu: 4294967300` trained at batch
// 4 and "completed"; `max_steps: 2147483648` ran 0 steps; 2^53 planned 0 activation bytes and died
// of SIGFPE). The ranges are the schema's maxima (core/schemas/run-config.schema.json), the one
// source the runtime embeds at build time.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { nativeCli, repoRoot } from './native-build';
import { smallConfig, tempDir } from './train-runs';

/** A config whose `section.key` is `raw`, written as JSON text (raw: numbers JavaScript cannot hold exactly). */
function configText(section: string, key: string, raw: string): string {
  const config = smallConfig({ training: { max_steps: 3 } }) as Record<string, Record<string, unknown>>;
  config[section] = { ...config[section], [key]: '@VALUE@' };
  return JSON.stringify(config, null, 2).replace('"@VALUE@"', raw);
}

function runCli(args: string[]) {
  const r = spawnSync(args[0], args.slice(1), { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// [section, key, the value as written, what the runtime and the editor say of it]
const probes: Array<[string, string, string, string]> = [
  ['training', 'batch_size_per_gpu', '4294967300', 'must be <= 65536, got 4294967300'],
  ['training', 'batch_size_per_gpu', '9007199254740992', 'must be <= 65536, got 9007199254740992'],
  ['training', 'max_steps', '4294967306', 'must be <= 1000000000, got 4294967306'],
  ['training', 'max_steps', '2147483648', 'must be <= 1000000000, got 2147483648'],
  ['model', 'n_layers', '4294967298', 'must be <= 1024, got 4294967298'],
  ['training', 'gradient_accumulation_steps', '-4294967295', 'must be >= 1, got -4294967295'],
  ['logging', 'every_n_steps', '4294967297.0', 'must be <= 1000000000, got 4294967297'],
];

describe("numbers beyond a key's range: refused by the runtime and both CLIs, never truncated", function () {
  this.timeout(300_000);
  let dir: string;
  before(() => {
    assert.ok(existsSync(nativeCli), `${nativeCli} is missing: npm test builds it`);
    dir = tempDir('numbers');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  probes.forEach(([section, key, raw, said], i) => {
    it(`${section}.${key}: ${raw} — fsdp-train-native refuses it before the first step (exit 2), naming key and value`, () => {
      const file = path.join(dir, `native-${i}.json`);
      writeFileSync(file, configText(section, key, raw));
      const runDir = path.join(dir, `native-run-${i}`);
      const r = runCli([nativeCli, '--config', file, '--run-dir', runDir]);
      assert.equal(r.signal, null, r.stderr);
      assert.equal(r.code, 2, r.stderr + r.stdout);
      // nlohmann prints a JSON float as written in full (4294967297.0).
      assert.match(r.stderr, new RegExp(`${escape(`${section}.${key}`)}: ${escape(said)}(\\.0)?\\n`));
      assert.ok(
        !existsSync(path.join(runDir, 'metrics.jsonl')) ||
          !readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').includes('"type":"step"'),
      );
    });

    for (const cli of ['fsdp-train', 'fsdp-estimate'] as const) {
      it(`${section}.${key}: ${raw} — ${cli} refuses it at its line (exit 2)`, () => {
        const file = path.join(dir, `${cli}-${i}.fsdp.json`);
        writeFileSync(file, configText(section, key, raw));
        const r = runCli([
          process.execPath,
          path.join(repoRoot, 'bin', `${cli}.mjs`),
          file,
          ...(cli === 'fsdp-train' ? ['--run-dir', path.join(dir, `cli-run-${i}`)] : []),
        ]);
        assert.equal(r.code, 2, r.stderr + r.stdout);
        assert.match(
          r.stderr,
          new RegExp(`${escape(path.basename(file))}:\\d+:\\d+ ${escape(`${section}.${key}`)}: ${escape(said)}`),
        );
      });
    }
  });

  it('fsdp.zero_stage 4294967298 is not stage 2 to the runtime', () => {
    const file = path.join(dir, 'zero-stage.json');
    writeFileSync(
      file,
      configText('fsdp', 'zero_stage', '4294967298').replace('"sharding_strategy": "NO_SHARD"', '"cpu_offload": false'),
    );
    const r = runCli([nativeCli, '--check', file]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /fsdp\.zero_stage: 4294967298 is not one of 0, 1, 2, 3/);
  });

  it('keys within range whose products exceed 64-bit bytes are refused by name, not planned modulo 2^64', () => {
    // Every key below its maximum; batch x heads x sequence² is 2^66 attention probabilities.
    const config = smallConfig({
      model: { d_model: 1024, n_heads: 1024, max_seq_len: 1_048_576 },
      data: { seq_len: 1_048_576 },
      training: { batch_size_per_gpu: 65_536 },
    });
    const file = path.join(dir, 'huge.json');
    writeFileSync(file, JSON.stringify(config));
    for (const flag of ['--check', '--plan']) {
      const r = runCli([nativeCli, flag, file]);
      assert.equal(r.signal, null, r.stderr);
      assert.equal(r.code, 2, `${flag}: ${r.stderr}${r.stdout}`);
      assert.match(r.stderr, /training\.batch_size_per_gpu: the memory plan of this config is beyond 2\^62 bytes/);
    }
  });
});
