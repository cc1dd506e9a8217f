// transformers ground truth of the decoder family (issue 35): the fixtures of
// test/fixtures/reference/decoder/ (made by test/reference/make_decoder_fixtures.py) are whole, small
// and say how they were made, and the float64 reference path replays them within 1e-10
// (native/test/decoder_fixture_test.cc) — its finite-difference checks passing too
// (native/test/decoder_gradient_check_test.cc). The worst error of each compared quantity is printed,
// so a drift shows before it fails.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { gtestBinary, repoRoot } from './native-build';

const DIR = path.join(repoRoot, 'test', 'fixtures', 'reference', 'decoder');
// "A few hundred KB at most" in all: the fixtures travel in every clone.
const MAX_TOTAL_BYTES = 512 * 1024;

interface EncodedArray {
  dtype: 'float32' | 'float64';
  count: number;
  crc32: number;
  base64: string;
}

interface DecoderFixture {
  format: string;
  version: number;
  family: 'llama' | 'qwen3';
  made_by: Record<string, unknown>;
  n_params: number;
  params: EncodedArray;
  logits: EncodedArray;
  grads: EncodedArray;
  transformers_inv_freq: EncodedArray;
  adamw: { losses: number[]; final_params: EncodedArray };
}

function checkArray(a: EncodedArray, where: string): void {
  const bytes = Buffer.from(a.base64, 'base64');
  assert.equal(bytes.length, a.count * (a.dtype === 'float64' ? 8 : 4), `${where}: length`);
  assert.equal(crc32(bytes), a.crc32, `${where}: CRC-32`);
}

describe('transformers reference fixtures of the decoder family (test/fixtures/reference/decoder)', function () {
  this.timeout(300_000);
  const files = existsSync(DIR)
    ? readdirSync(DIR)
        .filter((f) => f.endsWith('.json'))
        .sort()
    : [];

  it('has both families, small, whole, saying how, where and when they were made', () => {
    const families = new Set<string>();
    let total = 0;
    for (const f of files) {
      const file = path.join(DIR, f);
      total += statSync(file).size;
      const fx = JSON.parse(readFileSync(file, 'utf8')) as DecoderFixture;
      assert.equal(fx.format, 'fsdp-studio/decoder-reference-fixture', `${f}: format`);
      assert.equal(fx.version, 1, `${f}: version`);
      for (const key of ['command', 'date', 'torch', 'transformers', 'device', 'cpu_model'])
        assert.ok(fx.made_by[key], `${f}: made_by.${key} is missing`);
      assert.match(String(fx.made_by.command), /make_decoder_fixtures\.py/, `${f}: made_by.command`);
      families.add(fx.family);
      for (const [name, a] of Object.entries({
        params: fx.params,
        grads: fx.grads,
        logits: fx.logits,
        transformers_inv_freq: fx.transformers_inv_freq,
        'adamw.final_params': fx.adamw.final_params,
      }))
        checkArray(a, `${f} ${name}`);
      assert.equal(fx.params.count, fx.n_params, `${f}: params`);
      assert.equal(fx.grads.count, fx.n_params, `${f}: grads`);
      // AdamW on one fixed batch must make progress, or its steps test little.
      const losses = fx.adamw.losses;
      assert.ok(losses[losses.length - 1] < losses[0] - 0.1, `${f}: AdamW losses ${losses.join(' → ')}`);
    }
    assert.deepEqual([...families].sort(), ['llama', 'qwen3'], `fixtures in ${DIR}: ${files.join(', ') || 'none'}`);
    assert.ok(total <= MAX_TOTAL_BYTES, `the decoder fixtures hold ${total} bytes`);
  });

  it('is replayed by the float64 reference within 1e-10, whose gradients pass their finite-difference checks', () => {
    assert.ok(existsSync(gtestBinary), `${gtestBinary} is missing: is libgtest-dev installed?`);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-decoder-reference-'));
    try {
      const report = path.join(dir, 'report.json');
      const r = spawnSync(
        gtestBinary,
        [
          '--gtest_filter=Transformers/DecoderFixtureTest.*:DecoderFixtures.*:DecoderGradientCheck.*',
          `--gtest_output=json:${report}`,
        ],
        { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '2' } },
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
          console.log(`      ${c.name}\n${worst.map(([k, v]) => `        ${k.slice(6).padEnd(14)} ${v}`).join('\n')}`);
      }
      // Five cases per fixture, the check that both families are there, and the gradient checks.
      assert.equal(
        cases.filter((c) => c.classname.includes('DecoderFixtureTest')).length,
        5 * files.length,
        cases.map((c) => c.name).join(', '),
      );
      assert.ok(cases.some((c) => c.classname === 'DecoderGradientCheck'));
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
