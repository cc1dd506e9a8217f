// MFU against a true peak (issue 18, item 1): on a CPU, the machine's own sgemm peak measured as
// `--sgemm-peak` and bench:cpu do (2048³, by wall clock and CPU time), cached per machine; the
// run says what its peak is and where it came from; and no step's MFU is above 100% but by noise.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { nativeCli } from './native-build';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

interface PeakCache {
  v: number;
  machines: Record<string, { flops: number; measured: number; threads: number; n: number }>;
}

/** A model whose time is in large matrix products: the case where a low peak showed MFU > 100%. */
function matmulHeavy(threads: number): Record<string, unknown> {
  return smallConfig({
    model: { d_model: 256, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 64 },
    data: { seq_len: 64 },
    training: { batch_size_per_gpu: 8, max_steps: 6 },
    launch: { threads_per_rank: threads },
  });
}

describe('MFU against a true peak (runtime/peak_flops)', function () {
  this.timeout(180_000);
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

  /** `quick`: a tiny model for one step, when only the peak is of interest. */
  async function runOnce(name: string, threads = 2, quick = true) {
    const config = writeConfig(tmp, quick ? smallConfig({ training: { max_steps: 1 }, launch: { threads_per_rank: threads } }) : matmulHeavy(threads), `${name}.json`);
    const result = await train([config, '--run-dir', path.join(tmp, name)]);
    assert.equal(result.code, 0, result.stderr);
    const { events } = await readRun(path.join(tmp, name));
    return { start: eventsOf(events, 'run_start')[0], steps: eventsOf(events, 'step') };
  }

  it('measures the sgemm peak as --sgemm-peak does, says so in run_start, and no step exceeds it', async () => {
    const { start, steps } = await runOnce('first', 2, false);
    assert.match(start.peak_source ?? '', /^this machine's sgemm peak \(2048³, 2 threads\), measured now, cached in .*peak-flops\.json: [\d.]+ GFLOP\/s$/);
    // The same measurement from the command line, right now: the run's peak is of its size.
    const cli = [0, 1].map(() => JSON.parse(execFileSync(nativeCli, ['--sgemm-peak'], { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '2' } })) as { flops: number; cpu_flops: number });
    const measured = Math.max(...cli.map((c) => Math.max(c.flops, c.cpu_flops)));
    assert.ok(start.peak_flops! > 0.7 * measured, `peak ${start.peak_flops} against --sgemm-peak ${measured}`);
    assert.ok(start.host_memory! > 2 ** 30, 'the host memory is reported');
    for (const s of steps) {
      assert.ok(s.mfu! <= 1.05, `step ${s.step}: MFU ${s.mfu} above 100%`);
      assert.ok(s.flops_per_s! <= 1.05 * start.peak_flops!, `step ${s.step}: ${s.flops_per_s} FLOP/s above the peak`);
    }
    const stored = JSON.parse(readFileSync(cache, 'utf8')) as PeakCache;
    const entries = Object.entries(stored.machines);
    assert.equal(entries.length, 1);
    assert.match(entries[0][0], /\| 2 threads \|/, 'keyed by host, CPU, cores, threads and BLAS');
    assert.equal(entries[0][1].flops, start.peak_flops);
  });

  it('later runs take the cached peak; another thread count, a stale or a broken cache is measured again', async () => {
    const first = await runOnce('a');
    const again = await runOnce('b');
    assert.equal(again.start.peak_flops, first.start.peak_flops);
    assert.match(again.start.peak_source ?? '', /measured \d{4}-\d\d-\d\d, cached in /);

    const oneThread = await runOnce('c', 1);
    assert.match(oneThread.start.peak_source ?? '', /\(2048³, 1 threads\), measured now/);
    assert.equal(Object.keys((JSON.parse(readFileSync(cache, 'utf8')) as PeakCache).machines).length, 2);

    // 31 days old: measured again.
    const stored = JSON.parse(readFileSync(cache, 'utf8')) as PeakCache;
    for (const e of Object.values(stored.machines)) e.measured -= 31 * 86400;
    writeFileSync(cache, JSON.stringify(stored));
    assert.match((await runOnce('d')).start.peak_source ?? '', /measured now/);

    writeFileSync(cache, '{ not json');
    const broken = await runOnce('e');
    assert.match(broken.start.peak_source ?? '', /measured now/);
    assert.equal((JSON.parse(readFileSync(cache, 'utf8')) as PeakCache).v, 1, 'the broken cache is replaced');
  });
});
