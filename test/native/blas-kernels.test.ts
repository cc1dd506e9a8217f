// The right BLAS kernels on any machine (issue 24, item 1): the runtime reads the CPU's features
// (cpuid) and makes OpenBLAS use matching kernels before it initialises (runtime/blas_kernels.h);
// the choice is named in --probe and run_start; a run on a known-slow path says so; and every
// kernel choice the runtime can make, that this CPU can run, passes the gradient checks, the fast
// path against the reference, and the PyTorch parity fixtures. Choices this CPU cannot run (e.g.
// SkylakeX without AVX-512) are named as not run here.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { BlasKernels } from '../../core/protocol/blas-kernels';
import { gtestBinary, nativeCli } from './native-build';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

/** Every choice the runtime makes (runtime/blas_kernels.cc choose_blas_core), with the vector tier it needs; Prescott is OpenBLAS's own pick for a CPU without AVX. */
const CHOICES: Array<[string, number]> = [
  ['SkylakeX', 4],
  ['Haswell', 3],
  ['Zen', 3],
  ['Sandybridge', 2],
  ['Prescott', 1],
];

/** The environment without this test's knobs, plus `extra`. */
function envWith(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, OMP_NUM_THREADS: '2' };
  for (const k of ['OPENBLAS_CORETYPE', 'FSDP_BLAS_CHOICE', 'FSDP_CPU_FEATURES_HIDE', 'FSDP_EXPECT_BLAS_KERNELS'])
    delete env[k];
  return { ...env, ...extra };
}

function probe(extra: Record<string, string> = {}): BlasKernels {
  const out = execFileSync(nativeCli, ['--probe'], { encoding: 'utf8', env: envWith(extra) });
  return (JSON.parse(out) as { blas_kernels: BlasKernels }).blas_kernels;
}

describe('BLAS kernels chosen by the runtime (runtime/blas_kernels)', function () {
  this.timeout(900_000);
  // The runs below measure MFU's peak into a cache of their own, not the person's.
  let peakDir: string;
  const peakCacheBefore = process.env.FSDP_PEAK_CACHE;
  before(() => {
    peakDir = tempDir('blas-peak');
    process.env.FSDP_PEAK_CACHE = path.join(peakDir, 'peak-flops.json');
  });
  after(() => {
    if (peakCacheBefore === undefined) delete process.env.FSDP_PEAK_CACHE;
    else process.env.FSDP_PEAK_CACHE = peakCacheBefore;
    rmSync(peakDir, { recursive: true, force: true });
  });

  it("names the kernels, the CPU they were chosen for and how, and runs the runtime's choice", () => {
    const k = probe();
    console.log(`    this machine: ${k.note}`);
    assert.match(k.library, /^OpenBLAS \d/, 'the library and its build');
    assert.ok(existsSync(k.library_file), `the loaded library file: ${k.library_file}`);
    assert.match(k.cpu, /family 0x[0-9a-f]+ model 0x[0-9a-f]+/);
    assert.notEqual(k.set_by, 'environment');
    // The runtime's choice runs (re-executed with it, or OpenBLAS already agreed); none: OpenBLAS's own.
    if (k.chosen) assert.equal(k.kernels.toLowerCase(), k.chosen.toLowerCase(), k.note);
    assert.equal(k.slow, false, `the runtime's own choice is never a known-slow path: ${k.note}`);
    assert.ok(k.kernels_tier >= k.cpu_tier || k.kernels_tier < 0, k.note);
  });

  it('re-runs itself with its choice when OpenBLAS would pick other kernels (the masked-CPU case)', function () {
    // With AVX2 and FMA hidden, the runtime's choice is Sandybridge while OpenBLAS detects this CPU
    // as something else: the runtime must put its choice in place itself.
    const plain = probe();
    if (plain.cpu_tier < 3) {
      console.log(`    not run here: this CPU has no AVX2/FMA to hide (${plain.cpu})`);
      this.skip();
    }
    const k = probe({ FSDP_CPU_FEATURES_HIDE: 'avx512,avx2,fma' });
    assert.equal(k.chosen, 'Sandybridge');
    assert.equal(k.kernels, 'Sandybridge', k.note);
    assert.equal(k.set_by, 'runtime', k.note);
    assert.match(k.note, /chosen by the runtime for .*AVX without AVX2\/FMA/);
    assert.equal(k.slow, false, k.note);
  });

  it('takes out a core type this OpenBLAS does not know (it would fall back to SSE3 kernels)', () => {
    // As if the runtime had chosen kernels an older OpenBLAS lacks.
    const k = probe({ OPENBLAS_CORETYPE: 'Nonesuch', FSDP_BLAS_CHOICE: 'Nonesuch' });
    assert.equal(k.set_by, 'library');
    assert.match(k.note, /this OpenBLAS has no Nonesuch kernels, so it detected the CPU itself/);
    assert.notEqual(k.kernels, 'Prescott', `OpenBLAS's own detection, not its fallback: ${k.note}`);
  });

  it("leaves a person's OPENBLAS_CORETYPE alone, and a run on a known-slow path says so", async function () {
    const plain = probe();
    const slowCore = plain.cpu_tier >= 2 ? 'Prescott' : undefined;
    if (!slowCore) {
      console.log(`    not run here: no kernels are slower than this CPU's own (${plain.cpu})`);
      this.skip();
    }
    const k = probe({ OPENBLAS_CORETYPE: slowCore });
    assert.equal(k.set_by, 'environment');
    assert.equal(k.kernels, slowCore);
    assert.equal(k.slow, true, k.note);
    assert.match(
      k.note,
      /as OPENBLAS_CORETYPE=Prescott in the environment asks\. A known-slow path: this CPU runs .* kernels, and SSE ones make matrix products up to ~5x slower; unset OPENBLAS_CORETYPE/,
    );

    const tmp = tempDir('blas-slow');
    const before = process.env.OPENBLAS_CORETYPE;
    process.env.OPENBLAS_CORETYPE = slowCore;
    try {
      // MFU's peak for these kernels, planted: measuring sgemm on SSE kernels would take most of a minute here.
      const { key } = JSON.parse(
        execFileSync(nativeCli, ['--peak-cache-key', '2'], { encoding: 'utf8', env: process.env }),
      ) as { key: string };
      writeFileSync(
        process.env.FSDP_PEAK_CACHE!,
        JSON.stringify({ v: 2, machines: { [key]: { flops: 1e15, measured: Date.now() / 1000 } } }),
      );
      const config = writeConfig(tmp, smallConfig({ training: { max_steps: 1 } }));
      const result = await train([config, '--run-dir', path.join(tmp, 'run')]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /warning: BLAS: OpenBLAS's Prescott kernels, .*known-slow path/);
      const { events } = await readRun(path.join(tmp, 'run'));
      const start = eventsOf(events, 'run_start')[0];
      const named = (start.runtime as { blas_kernels?: BlasKernels }).blas_kernels;
      assert.equal(named?.kernels, slowCore);
      assert.equal(named?.slow, true);
      const warned = eventsOf(events, 'log').find((e) => e.level === 'warn' && /BLAS: .*known-slow path/.test(e.msg));
      assert.ok(warned, 'a warn log event in metrics.jsonl says so');
    } finally {
      if (before === undefined) delete process.env.OPENBLAS_CORETYPE;
      else process.env.OPENBLAS_CORETYPE = before;
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('a normal run names its kernels in run_start and logs no BLAS warning', async () => {
    const tmp = tempDir('blas-run');
    try {
      const config = writeConfig(tmp, smallConfig({ training: { max_steps: 1 } }));
      const result = await train([config, '--run-dir', path.join(tmp, 'run')]);
      assert.equal(result.code, 0, result.stderr);
      const { events } = await readRun(path.join(tmp, 'run'));
      const named = (eventsOf(events, 'run_start')[0].runtime as { blas_kernels?: BlasKernels }).blas_kernels;
      assert.ok(named?.kernels, 'run_start names the kernels');
      assert.equal(named?.slow, false);
      assert.doesNotMatch(result.stderr, /warning: BLAS/);
      assert.equal(eventsOf(events, 'log').filter((e) => /^BLAS: /.test(e.msg)).length, 0);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  // The numerical tests under each choice: wrong results from a BLAS on a CPU it misidentifies are
  // a known failure of older OpenBLAS builds, so a choice is made only if these pass under it.
  const numerical = [
    'GradientCheck.*',
    'FastVsReference.*',
    '*ReferenceFixture*',
    'ActivationCheckpointing.*',
    'BlasKernels.*',
  ].join(':');
  for (const [core, tier] of CHOICES) {
    it(`passes the gradient checks, fast-vs-reference and PyTorch parity on OpenBLAS's ${core} kernels`, function () {
      assert.ok(existsSync(gtestBinary), `${gtestBinary} is missing: is libgtest-dev installed?`);
      const cpu = probe();
      if (tier > cpu.cpu_tier) {
        console.log(
          `    not run here: ${core} kernels need instructions this CPU lacks (${cpu.cpu}); a CPU with them runs this case`,
        );
        this.skip();
      }
      const dir = tempDir('blas-gtest');
      try {
        const report = path.join(dir, 'report.json');
        const r = spawnSync(gtestBinary, [`--gtest_filter=${numerical}`, `--gtest_output=json:${report}`], {
          encoding: 'utf8',
          env: envWith({
            OPENBLAS_CORETYPE: core,
            FSDP_EXPECT_BLAS_KERNELS: core,
            OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive',
          }),
        });
        assert.ok(existsSync(report), `no report (exit ${r.status ?? r.signal}):\n${r.stderr}`);
        const result = JSON.parse(readFileSync(report, 'utf8')) as {
          tests: number;
          testsuites: Array<{
            testsuite: Array<{ name: string; classname: string; failures?: Array<{ failure: string }> }>;
          }>;
        };
        const cases = result.testsuites.flatMap((s) => s.testsuite);
        const failed = cases.filter((t) => t.failures?.length);
        assert.deepEqual(
          failed.map((t) => `${t.classname}.${t.name}: ${t.failures![0].failure}`),
          [],
          `on ${core}`,
        );
        assert.equal(r.status, 0, r.stdout.slice(-3000));
        for (const suite of ['GradientCheck', 'FastVsReference', 'ReferenceFixtureTest', 'BlasKernels']) {
          assert.ok(
            cases.some((t) => t.classname.split('/').includes(suite)),
            `${suite} ran on ${core}`,
          );
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
