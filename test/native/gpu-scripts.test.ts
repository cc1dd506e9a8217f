// The GPU machine's scripts (scripts/gpu/), exercised here before a GPU call can waste its few
// minutes on a broken one: test.sh and build.sh parse; multirank_runs.py runs its quick set on the
// CPU backend (FULL_SHARD at 1 and 2 ranks through MPI within 1e-6 and memory = plan on every rank,
// a SIGKILLed 2-rank run resumed bit for bit, the launch.collectives refusal, --allreduce-check),
// and summary.py turns the parts' results into the table, naming what failed or was not written.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nativeCli, repoRoot } from './native-build';

const gpuScripts = path.join(repoRoot, 'scripts', 'gpu');

describe('GPU scripts, dry run on the CPU', function () {
  this.timeout(300_000);
  let out = '';

  before(function () {
    if (spawnSync('mpirun', ['--version']).status !== 0 || spawnSync('python3', ['--version']).status !== 0) {
      console.log('    no mpirun or python3 on this machine');
      this.skip();
    }
    out = mkdtempSync(path.join(os.tmpdir(), 'fsdp-gpu-scripts-'));
  });
  after(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('test.sh and build.sh are valid bash', () => {
    for (const f of ['test.sh', 'build.sh']) {
      const r = spawnSync('bash', ['-n', path.join(gpuScripts, f)], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${f}: ${r.stderr}`);
    }
  });

  it('multirank_runs.py passes its quick checks on the CPU backend, and summary.py reports them', () => {
    const r = spawnSync('python3', [path.join(gpuScripts, 'multirank_runs.py'), '--cli', nativeCli, '--out', out, '--root', repoRoot, '--device', 'cpu', '--quick'], {
      encoding: 'utf8',
      env: { ...process.env, OMP_NUM_THREADS: '1', OMP_WAIT_POLICY: 'passive' },
      timeout: 240_000,
    });
    assert.equal(r.status, 0, `multirank_runs.py failed:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-2000)}`);
    const results = JSON.parse(readFileSync(path.join(out, 'multirank.json'), 'utf8')) as Record<string, { ok: boolean | null; detail: unknown }>;
    const names = Object.keys(results).filter((k) => typeof results[k] === 'object');
    for (const want of ['FULL_SHARD x2: losses within 1e-6 of 1 rank', "FULL_SHARD x2: every rank's peak per category = plan", 'SIGKILLed 2-rank CUDA run resumes bit for bit', '--allreduce-check x2 on CPU buffers']) {
      assert.ok(names.includes(want), `${want} missing from ${names.join('; ')}`);
      assert.equal(results[want].ok, true, `${want}: ${JSON.stringify(results[want].detail)}`);
    }
    // The summary names what is missing (no GPU suites here) and fails.
    writeFileSync(path.join(out, 'environment.txt'), 'date: 2026-01-01T00:00:00Z\nNVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 9.0\n');
    writeFileSync(path.join(out, 'timings.txt'), 'build 1 0\nmulti-rank-runs 20 0\n');
    const s = spawnSync('python3', [path.join(gpuScripts, 'summary.py'), '--out', out, '--commit', 'abc', '--timings', path.join(out, 'timings.txt')], { encoding: 'utf8' });
    assert.equal(s.status, 1);
    const md = readFileSync(path.join(out, 'gpu-test-results.md'), 'utf8');
    assert.match(md, /^# GPU test results — NVIDIA H100 80GB HBM3 \(81559 MiB\), driver 580\.159\.04, 2026-01-01/);
    assert.match(md, /\| cuda GoogleTest \| FAILED: .*cuda-tests\.json was not written/);
    assert.match(md, /\| FULL_SHARD x2: losses within 1e-6 of 1 rank \| ok \|/);
    assert.ok(existsSync(path.join(out, 'gpu-test-results.json')));
  });
});
