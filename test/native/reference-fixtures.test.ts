// PyTorch ground truth (issue 9): the fixtures of test/fixtures/reference/ (made by
// test/reference/make_fixtures.py, `npm run fixtures:reference`) are whole and say how they were
// made, and the runtime replays them within tolerance — the float64 reference path against PyTorch
// float64, the float32 fast path against PyTorch float32 (native/test/reference_fixture_test.cc).
// The worst error of each compared quantity is printed, so a drift shows before it fails.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { resolveRunConfig, validateRunConfigSchema, type RunConfig } from '../../core/config/run-config';
import { gtestBinary, loadAddon, repoRoot } from './native-build';

const DIR = path.join(repoRoot, 'test', 'fixtures', 'reference');
const MAX_BYTES = 2 * 1024 * 1024;

interface EncodedArray {
  dtype: 'float32' | 'float64';
  count: number;
  crc32: number;
  base64: string;
}

interface ModelFixture {
  format: string;
  version: number;
  name: string;
  made_by: Record<string, unknown>;
  config: RunConfig;
  n_params: number;
  initial_params: EncodedArray;
  runs: Record<
    'float64' | 'float32',
    { steps: Array<{ loss: number }>; logits_step1: EncodedArray; final_params: EncodedArray }
  >;
}

function checkArray(a: EncodedArray, where: string): void {
  const bytes = Buffer.from(a.base64, 'base64');
  assert.equal(bytes.length, a.count * (a.dtype === 'float64' ? 8 : 4), `${where}: length`);
  assert.equal(crc32(bytes), a.crc32, `${where}: CRC-32`);
}

describe('PyTorch reference fixtures (test/fixtures/reference)', function () {
  this.timeout(120_000);
  const files = existsSync(DIR)
    ? readdirSync(DIR)
        .filter((f) => f.endsWith('.json') && f !== 'schedules.json')
        .sort()
    : [];

  it('has two model fixtures and the schedules, each under 2 MB, saying how, where and when it was made', () => {
    assert.ok(files.length >= 2, `model fixtures in ${DIR}: ${files.join(', ') || 'none'}`);
    for (const f of [...files, 'schedules.json']) {
      const file = path.join(DIR, f);
      assert.ok(statSync(file).size <= MAX_BYTES, `${f}: ${statSync(file).size} bytes`);
      const doc = JSON.parse(readFileSync(file, 'utf8')) as { version: number; made_by: Record<string, unknown> };
      assert.equal(doc.version, 1, `${f}: version`);
      for (const key of ['command', 'date', 'torch', 'device', 'cpu_model'])
        assert.ok(doc.made_by[key], `${f}: made_by.${key} is missing`);
      assert.match(String(doc.made_by.command), /make_fixtures\.py/, `${f}: made_by.command`);
    }
  });

  it('holds whole arrays, a valid run config, and the parameter count the runtime plans', () => {
    const addon = loadAddon();
    for (const f of files) {
      const fx = JSON.parse(readFileSync(path.join(DIR, f), 'utf8')) as ModelFixture;
      assert.equal(fx.format, 'fsdp-studio/reference-fixture', `${f}: format`);
      assert.ok(validateRunConfigSchema(fx.config), `${f}: config: ${JSON.stringify(validateRunConfigSchema.errors)}`);
      assert.equal(addon.memoryPlan(resolveRunConfig(fx.config, DIR)).n_params, fx.n_params, `${f}: parameter count`);
      checkArray(fx.initial_params, `${f} initial_params`);
      assert.equal(fx.initial_params.count, fx.n_params);
      for (const dtype of ['float64', 'float32'] as const) {
        const run = fx.runs[dtype];
        assert.equal(run.steps.length, 10, `${f} ${dtype}: steps`);
        checkArray(run.logits_step1, `${f} ${dtype} logits_step1`);
        checkArray(run.final_params, `${f} ${dtype} final_params`);
        assert.equal(run.final_params.dtype, dtype);
        // Training on one fixed batch must make progress, or the fixture tests little.
        assert.ok(
          run.steps[9].loss < run.steps[0].loss - 0.1,
          `${f} ${dtype}: loss ${run.steps[0].loss} → ${run.steps[9].loss}`,
        );
      }
    }
  });

  it('is replayed by the runtime within tolerance (float64: 1e-10, float32: 1e-5 on loss and logits) and by its schedules', () => {
    assert.ok(existsSync(gtestBinary), `${gtestBinary} is missing: is libgtest-dev installed?`);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-reference-'));
    try {
      const report = path.join(dir, 'report.json');
      const r = spawnSync(
        gtestBinary,
        ['--gtest_filter=PyTorch/ReferenceFixtureTest.*:ReferenceFixtures.*', `--gtest_output=json:${report}`],
        {
          encoding: 'utf8',
          env: { ...process.env, OMP_NUM_THREADS: '2' },
        },
      );
      assert.ok(existsSync(report), `the gtest binary wrote no report (exit ${r.status ?? r.signal}):\n${r.stderr}`);
      const result = JSON.parse(readFileSync(report, 'utf8')) as {
        testsuites: Array<{
          testsuite: Array<
            Record<string, string> & { name: string; classname: string; failures?: Array<{ failure: string }> }
          >;
        }>;
      };
      const cases = result.testsuites.flatMap((s) => s.testsuite);
      for (const c of cases) {
        const worst = Object.entries(c).filter(([k]) => k.startsWith('worst_'));
        if (worst.length)
          console.log(`      ${c.name}\n${worst.map(([k, v]) => `        ${k.slice(6).padEnd(18)} ${v}`).join('\n')}`);
      }
      // Two runs per model fixture, the schedules, and the check that the fixtures exist.
      assert.equal(cases.length, 2 * files.length + 2, cases.map((c) => c.name).join(', '));
      const failed = cases.filter((c) => c.failures?.length);
      assert.deepEqual(
        failed.map((c) => `${c.classname}.${c.name}: ${c.failures![0].failure}`),
        [],
      );
      assert.equal(r.status, 0, r.stdout.slice(-4000));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
