// Runs the GoogleTest binary of the native runtime (native/test/*.cc: gradient checks, fast path
// vs reference, schedules, optimizer groups, data loader, checkpoint format) and reports each
// failing case by name.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recordMs } from '../harness/durations';
import { gtestBinary } from './native-build';

describe('native runtime: GoogleTest suite', function () {
  this.timeout(600_000);

  it('passes every case', () => {
    assert.ok(
      existsSync(gtestBinary),
      `${gtestBinary} is missing: is libgtest-dev installed? (scripts/setup/system-packages.mjs)`,
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-gtest-'));
    try {
      const report = path.join(dir, 'report.json');
      const r = spawnSync(gtestBinary, [`--gtest_output=json:${report}`], {
        encoding: 'utf8',
        env: { ...process.env, OMP_NUM_THREADS: '2', OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' },
      });
      assert.ok(existsSync(report), `the gtest binary wrote no report (exit ${r.status ?? r.signal}):\n${r.stderr}`);
      const result = JSON.parse(readFileSync(report, 'utf8')) as {
        tests: number;
        testsuites: Array<{
          testsuite: Array<{ name: string; classname: string; failures?: Array<{ failure: string }> }>;
        }>;
      };
      const cases = result.testsuites.flatMap((s) => s.testsuite);
      // Durations a case records (RecordProperty("…_ms", …)) are figures for the benchmark, not verdicts.
      for (const t of cases)
        for (const [key, value] of Object.entries(t))
          if (key.endsWith('_ms')) recordMs(`gtest ${t.classname}.${t.name}: ${key}`, Number(value));
      const failed = cases.filter((t) => t.failures?.length);
      assert.deepEqual(
        failed.map((t) => `${t.classname}.${t.name}: ${t.failures![0].failure}`),
        [],
      );
      assert.equal(r.status, 0, r.stdout.slice(-4000));
      assert.ok(result.tests > 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
