// MFU that is never above 100% (issue 24, item 3; backend/peak_flops.h). On a CPU the peak is the
// best this BLAS, with these kernels and threads, has reached on this machine, cached in
// $FSDP_PEAK_CACHE: a run faster than the cached peak raises it and says so; an entry of other
// kernels, threads or library is not this one; an entry older than a week is measured again; a
// broken cache is measured over. Every rule is checked with planted cache files — no timing is
// compared with another (the machine is shared: timings belong in `npm run bench:cpu`).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CpuGemm } from '../../core/protocol/blas-kernels';
import { nativeCli } from './native-build';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

interface PeakEntry {
  flops: number;
  measured: number;
  threads?: number;
  kernels?: string;
  library?: string;
  raised_by?: string;
  raised_from?: number;
}
interface PeakCache {
  v: number;
  machines: Record<string, PeakEntry>;
}

const DAY = 86400;
const now = () => Date.now() / 1000;
/** Far above what any CPU's sgemm reaches: a run never raises it, and a re-measurement never equals it. */
const UNREACHABLE = 5e15;

describe('MFU against a true peak (backend/peak_flops)', function () {
  this.timeout(300_000);
  let tmp: string;
  let cache: string;
  const before = process.env.FSDP_PEAK_CACHE;

  beforeEach(() => {
    tmp = tempDir('peak');
    cache = path.join(tmp, 'cache', 'peak-flops.json');
    process.env.FSDP_PEAK_CACHE = cache;
  });
  afterEach(() => {
    if (before === undefined) delete process.env.FSDP_PEAK_CACHE;
    else process.env.FSDP_PEAK_CACHE = before;
    rmSync(tmp, { recursive: true, force: true });
  });

  /** The cache key a run with `threads` threads uses: host, CPU, cores, threads, library, its file, kernels. */
  function keyFor(threads: number): string {
    const out = JSON.parse(
      execFileSync(nativeCli, ['--peak-cache-key', String(threads)], { encoding: 'utf8', env: process.env }),
    ) as { path: string; key: string };
    assert.equal(out.path, cache);
    return out.key;
  }

  function plant(machines: Record<string, PeakEntry> | string): void {
    mkdirSync(path.dirname(cache), { recursive: true });
    writeFileSync(cache, typeof machines === 'string' ? machines : JSON.stringify({ v: 2, machines }));
  }
  const stored = () => JSON.parse(readFileSync(cache, 'utf8')) as PeakCache;

  async function run(name: string, steps = 1, threads = 2, paramDtype = 'float32') {
    const config = writeConfig(
      tmp,
      smallConfig({
        training: { max_steps: steps },
        launch: { threads_per_rank: threads },
        mixed_precision: { param_dtype: paramDtype },
      }),
      `${name}.json`,
    );
    const result = await train([config, '--run-dir', path.join(tmp, name)]);
    assert.equal(result.code, 0, result.stderr);
    const { events } = await readRun(path.join(tmp, name));
    return { start: eventsOf(events, 'run_start')[0], steps: eventsOf(events, 'step'), logs: eventsOf(events, 'log') };
  }

  it('without a cache: measures the sgemm peak, says so in run_start, and stores it under the kernels, threads and library', async () => {
    const t0 = now();
    const { start, steps } = await run('first', 2);
    assert.match(
      start.peak_source ?? '',
      /^this machine's sgemm peak \(2048³, 2 threads\), measured now, cached in .*peak-flops\.json: [\d.]+ GFLOP\/s$/,
    );
    assert.ok(
      start.peak_measured! >= t0 - 1 && start.peak_measured! <= now() + 1,
      'run_start says when it was measured',
    );
    assert.ok(start.host_memory! > 2 ** 30, 'the host memory is reported');
    for (const s of steps) assert.ok(s.mfu! <= 1, `step ${s.step}: MFU ${s.mfu}`);
    const entries = Object.entries(stored().machines);
    assert.equal(entries.length, 1);
    const [key, entry] = entries[0];
    assert.equal(key, keyFor(2));
    assert.match(
      key,
      /\| 2 threads \| OpenBLAS \d[^|]* \| \S*libopenblas\S* \| \w+ kernels$/,
      'keyed by host, CPU, cores, threads, library, its file and kernels',
    );
    assert.equal(entry.flops, start.peak_flops);
    assert.equal(entry.threads, 2);
    assert.ok(entry.kernels && key.endsWith(`| ${entry.kernels} kernels`));
  });

  it('takes a fresh cached peak as it is, naming when it was measured', async () => {
    const measured = Math.floor(now() - 6.5 * DAY);
    plant({ [keyFor(2)]: { flops: UNREACHABLE, measured } });
    const { start, steps } = await run('cached');
    assert.equal(start.peak_flops, UNREACHABLE);
    assert.equal(start.peak_measured, measured);
    const day = new Date(measured * 1000).toISOString().slice(0, 10);
    assert.match(
      start.peak_source ?? '',
      new RegExp(`\\(2048³, 2 threads\\), measured ${day}, cached in .*: 5000000\\.0 GFLOP/s$`),
    );
    assert.equal(stored().machines[keyFor(2)].flops, UNREACHABLE, 'left as it was');
    assert.ok(
      steps.every((s) => s.peak_flops === undefined),
      'nothing raised it',
    );
  });

  it('a run faster than the cached peak raises it, says so, and no MFU is above 100%', async () => {
    const key = keyFor(2);
    const measured = Math.floor(now() - DAY);
    plant({ [key]: { flops: 1000, measured } }); // 1 kFLOP/s: as if measured on a machine too loaded to run
    const { start, steps, logs } = await run('raise', 3);
    assert.equal(start.peak_flops, 1000);
    const raised = steps.filter((s) => s.peak_flops !== undefined);
    assert.ok(raised.length >= 1, 'a step event carries the raised peak');
    assert.equal(raised[0].step, 1);
    assert.equal(raised[0].mfu, 1, 'the step that raised it is at 100%');
    assert.equal(raised[0].peak_flops, raised[0].flops_per_s);
    let peak = start.peak_flops!;
    for (const s of steps) {
      peak = s.peak_flops ?? peak;
      assert.ok(s.mfu! <= 1, `step ${s.step}: MFU ${s.mfu}`);
      assert.ok(s.flops_per_s! <= peak, `step ${s.step}: ${s.flops_per_s} FLOP/s above the peak ${peak}`);
    }
    const said = logs.find((l) =>
      /^MFU's peak raised from 0\.0 GFLOP\/s to [\d.]+ GFLOP\/s at step 1: this run's model FLOP\/s went above it/.test(
        l.msg,
      ),
    );
    assert.ok(said, `a log event says so: ${logs.map((l) => l.msg).join(' | ')}`);
    assert.match(said!.msg, /\(raised in .*peak-flops\.json too\)$/);
    const entry = stored().machines[key];
    assert.equal(entry.flops, peak, 'the cache holds the highest the run reached');
    assert.equal(entry.measured, measured, 'raising keeps the measurement date: the week still counts from it');
    assert.ok(
      entry.raised_from! >= 1000 && entry.raised_from! < entry.flops,
      `raised from ${entry.raised_from}: the planted peak or an earlier step's`,
    );
    assert.match(entry.raised_by ?? '', /^run \S+ at step \d+$/);
    // The next run starts from the raised peak and says what raised it (run_start is written before
    // its own steps, which may raise the peak again when this run goes faster: the load varies).
    const next = await run('after');
    assert.equal(next.start.peak_flops, entry.flops);
    assert.match(next.start.peak_source ?? '', /, raised by run \S+ at step \d+, cached in /);
  });

  it("a CPU run with bf16 products has its own peak: it neither raises float32's nor is held to it", async function () {
    const probe = JSON.parse(execFileSync(nativeCli, ['--probe'], { encoding: 'utf8' })) as {
      cpu_gemm: { bfloat16: CpuGemm };
    };
    // Where bf16 cannot run at all (no oneDNN, no bf16 instructions) there is no bf16 peak to keep
    // apart: test/native/cpu-bf16.test.ts checks the refusal. Where it is refused only for want of
    // AMX-BF16 tiles (slower than float32 on such a CPU: a benchmark's matter), the override runs it,
    // as the keeping of the peaks is what this tests.
    const bf16 = probe.cpu_gemm.bfloat16;
    const overridable = !bf16.bf16_available && (bf16.bf16_refusal ?? '').includes('FSDP_CPU_BF16_WITHOUT_AMX=1');
    if (!bf16.bf16_available && !overridable) this.skip();
    const saved = process.env.FSDP_CPU_BF16_WITHOUT_AMX;
    if (overridable) process.env.FSDP_CPU_BF16_WITHOUT_AMX = '1';
    try {
      await keepsBf16PeakApart(bf16);
    } finally {
      if (saved === undefined) delete process.env.FSDP_CPU_BF16_WITHOUT_AMX;
      else process.env.FSDP_CPU_BF16_WITHOUT_AMX = saved;
    }
  });

  async function keepsBf16PeakApart(bf16: CpuGemm): Promise<void> {
    const key = keyFor(2);
    const measured = Math.floor(now() - DAY);
    // A float32 peak far below what bf16 products reach: a bf16 run held to it would raise it.
    plant({ [key]: { flops: 1000, measured } });
    const { start, steps } = await run('bf16', 2, 2, 'bfloat16');
    assert.match(
      start.peak_source ?? '',
      /^this machine's bf16 GEMM peak \(oneDNN \w+, 2048³, 2 threads\), measured now, cached in /,
    );
    for (const s of steps) assert.ok(s.mfu! <= 1, `step ${s.step}: MFU ${s.mfu}`);
    const after = stored().machines;
    assert.deepEqual(after[key], { flops: 1000, measured }, "float32's entry is neither used nor raised");
    const own = Object.keys(after).filter((k) => k !== key);
    assert.deepEqual(own, [`${key} | bf16 products on oneDNN ${bf16.isa}`]);
    assert.equal(after[own[0]].flops, start.peak_flops);
  }

  it('measures again for other kernels, another thread count or library, after a week, and for a date in the future', async () => {
    const key = keyFor(2);
    const otherKernels = key.replace(/\| \w+ kernels$/, '| Prescott kernels');
    const otherLibrary = key.replace(/OpenBLAS \d[^|]*/, 'OpenBLAS 0.2.20 NO_AFFINITY Haswell MAX_THREADS=64');
    assert.notEqual(otherKernels, key);
    assert.notEqual(otherLibrary, key);
    const planted: Record<string, PeakEntry> = {
      [otherKernels]: { flops: UNREACHABLE, measured: now() },
      [otherLibrary]: { flops: UNREACHABLE, measured: now() },
      [keyFor(1)]: { flops: UNREACHABLE, measured: now() },
      [key]: { flops: UNREACHABLE, measured: now() - 7.1 * DAY },
    };
    plant(planted);
    const stale = await run('stale');
    assert.match(stale.start.peak_source ?? '', /\(2048³, 2 threads\), measured now, cached in /);
    assert.notEqual(stale.start.peak_flops, UNREACHABLE);
    const after = stored().machines;
    assert.ok(after[key].measured > now() - 600, 'the week-old entry was replaced by a new measurement');
    for (const k of [otherKernels, otherLibrary, keyFor(1)])
      assert.deepEqual(after[k], planted[k], 'entries of other kernels, library and threads are kept, not used');

    plant({ [key]: { flops: UNREACHABLE, measured: now() + 30 * DAY } });
    assert.match((await run('future')).start.peak_source ?? '', /measured now/, 'a date in the future is not trusted');
  });

  it('a broken cache or one of the old format is measured over and replaced', async () => {
    plant('{ not json');
    assert.match((await run('broken')).start.peak_source ?? '', /measured now/);
    assert.equal(stored().v, 2, 'the broken cache is replaced');
    // Version 1 kept whatever it first measured for ever (the 36.6 GFLOP/s of a loaded machine).
    plant(JSON.stringify({ v: 1, machines: { [keyFor(2)]: { flops: 36.6e9, measured: now() } } }));
    assert.match((await run('old')).start.peak_source ?? '', /measured now/);
    assert.equal(stored().v, 2);
  });

  it('--sgemm-peak raises a lower cached peak and leaves a higher one', () => {
    const threads = (
      JSON.parse(execFileSync(nativeCli, ['--sgemm-peak', '256'], { encoding: 'utf8' })) as { threads: number }
    ).threads;
    const key = keyFor(threads);
    const measured = Math.floor(now() - DAY);
    plant({ [key]: { flops: 1000, measured } });
    const up = JSON.parse(execFileSync(nativeCli, ['--sgemm-peak'], { encoding: 'utf8' })) as {
      flops: number;
      cpu_flops: number;
      cache: string;
    };
    assert.match(up.cache, /^raised the cached peak in .*peak-flops\.json$/);
    const entry = stored().machines[key];
    assert.equal(entry.flops, Math.max(up.flops, up.cpu_flops));
    assert.equal(entry.measured, measured);
    assert.equal(entry.raised_by, 'an sgemm measurement');

    plant({ [key]: { flops: UNREACHABLE, measured } });
    const kept = JSON.parse(execFileSync(nativeCli, ['--sgemm-peak'], { encoding: 'utf8' })) as { cache: string };
    assert.match(kept.cache, /^below the cached peak in .*peak-flops\.json \(5000000\.0 GFLOP\/s\)$/);
    assert.equal(stored().machines[key].flops, UNREACHABLE);
    // Another size is not the peak's measurement and is not cached.
    assert.equal(
      (JSON.parse(execFileSync(nativeCli, ['--sgemm-peak', '256'], { encoding: 'utf8' })) as { cache?: string }).cache,
      undefined,
    );
  });
});
