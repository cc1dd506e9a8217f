// Issue 19, items 6 and 10: before the first allocation the memory plan is compared with what
// this machine can hold — MemAvailable, and a memory cgroup's limit (a real cgroup made here) — and
// a run that cannot fit is refused with the numbers, instead of being OOM-killed with an empty log
// or ending in a bare std::bad_alloc (the in-schema 52-trillion-parameter model); an allocation
// that still fails says what it was for and how many bytes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

const cliShim = path.join(__dirname, '..', '..', 'bin', 'fsdp-train.mjs');
const biggest = { d_model: 65536, n_layers: 1024, n_heads: 512, vocab_size: 1048576, max_seq_len: 1048576 };

/** A memory cgroup (v1) under this process's own, or undefined with the reason it cannot be made here. */
function memoryCgroup(limitBytes: number): { dir: string } | { skip: string } {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (!line) return { skip: 'no cgroup v1 memory controller on this machine (cgroup v2 or none)' };
  const dir = path.join('/sys/fs/cgroup/memory', line.split(':')[2], `fsdp-test-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    return { dir };
  } catch (e) {
    return {
      skip: `cannot create a memory cgroup here (${(e as Error).message}): needs root and a writable cgroup hierarchy`,
    };
  }
}

describe('fsdp-train: memory is checked before it is allocated', function () {
  this.timeout(180_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('hardening-memory')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses the in-schema 52-trillion-parameter model with the numbers, not std::bad_alloc', async () => {
    const runDir = path.join(dir, 'run');
    const r = await train([
      writeConfig(dir, smallConfig({ model: biggest, data: { seq_len: 32 }, training: { batch_size_per_gpu: 1 } })),
      '--run-dir',
      runDir,
    ]);
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /bad_alloc/);
    assert.match(
      r.stderr,
      /run failed: the memory plan needs [\d.]+ GiB of host memory per rank \(params [\d.]+ GiB, grads [\d.]+ GiB, optimizer [\d.]+ GiB, .*\), but [\d.]+ GiB is available/,
    );
    assert.match(r.stderr, /set launch\.check_memory: false \(fsdp-train --no-memory-check\) to try anyway/);
    const { manifest } = await readRun(runDir);
    assert.equal(manifest.status, 'failed');
  });

  it('with the check turned off, says which allocation failed and how large it was', async () => {
    const r = await train([
      writeConfig(dir, smallConfig({ model: biggest, data: { seq_len: 32 }, training: { batch_size_per_gpu: 1 } })),
      '--no-memory-check',
      '--run-dir',
      path.join(dir, 'run'),
    ]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /out of memory: \d+ bytes \([\d.]+ GiB\) for params could not be allocated, with [\d.]+ MiB live \(params/,
    );
  });

  it("refuses a run that would pass its memory cgroup's limit, naming the limit (instead of an OOM kill, exit 137)", async function () {
    const cg = memoryCgroup(256 * 1024 * 1024);
    if ('skip' in cg) {
      console.log(`      skipped: ${cg.skip}`);
      this.skip();
    }
    try {
      const runDir = path.join(dir, 'run');
      // About 600 MiB planned (float32 parameters, gradients, AdamW moments, activations) under a 256 MiB limit.
      const config = writeConfig(
        dir,
        smallConfig({
          model: { d_model: 512, n_layers: 8, n_heads: 8, max_seq_len: 64 },
          data: { seq_len: 64 },
          training: { batch_size_per_gpu: 8 },
        }),
      );
      const child = spawn(
        'sh',
        [
          '-c',
          `echo $$ > ${cg.dir}/cgroup.procs && exec "$0" "$@"`,
          process.execPath,
          cliShim,
          config,
          '--run-dir',
          runDir,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.stdout.resume();
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      assert.equal(code, 1, stderr);
      assert.match(
        stderr,
        new RegExp(
          `the memory plan needs [\\d.]+ MiB of host memory per rank .* but [\\d.]+ MiB is available \\(memory cgroup ${cg.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: limit 256 MiB, [\\d.]+ MiB in use\\)`,
        ),
      );
    } finally {
      if (existsSync(cg.dir)) rmdirSync(cg.dir);
    }
  });
});
