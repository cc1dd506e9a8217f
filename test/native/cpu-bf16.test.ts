// Mixed precision on the CPU backend (native/src/backend/cpu/bf16_gemm.h): the same short run on
// the project's corpus (byte-level fortunes) in float32 and with mixed_precision.param_dtype
// bfloat16 — every matrix product on bf16 operands, everything else float32. The bf16 run's loss
// falls as float32's does, step by step within a stated margin, and its run_start names the GEMM
// it ran. Where this build or CPU cannot run bf16 (no oneDNN, no AMX-BF16), the run is refused
// before it starts, with the probe's reason. No timings: bench:cpu measures the speed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { CpuGemm } from '../../core/protocol/blas-kernels';
import { nativeCli } from './native-build';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

// 60 steps of a 4-layer d_model 64 model on 8 x 64 bytes: long enough for the loss to fall by a
// third, short enough for a test.
const STEPS = 60;
// bf16 rounds every product's operands by up to 2^-9: the losses of the same batches stay within
// 2 % of float32's at every step.
const MARGIN = 0.02;

function config(paramDtype: string): Record<string, unknown> {
  return smallConfig({
    model: { d_model: 64, n_layers: 4, n_heads: 4, vocab_size: 256, max_seq_len: 64 },
    data: { seq_len: 64 },
    training: { batch_size_per_gpu: 8, max_steps: STEPS, learning_rate: 0.001, warmup_steps: 10, seed: 7 },
    mixed_precision: { param_dtype: paramDtype },
  });
}

describe('native runtime: bf16 matrix products on the CPU', function () {
  this.timeout(600_000);
  let dir: string;
  before(() => (dir = tempDir('cpu-bf16')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("trains on the corpus with a loss that falls as float32's, or is refused with the probe's reason", async () => {
    const probe = JSON.parse(execFileSync(nativeCli, ['--probe'], { encoding: 'utf8' })) as {
      cpu_gemm: { float32: CpuGemm; bfloat16: CpuGemm };
    };
    const bf16 = probe.cpu_gemm.bfloat16;
    const runBf16 = path.join(dir, 'bf16');
    const r16 = await train([writeConfig(dir, config('bfloat16'), 'bf16.json'), '--run-dir', runBf16]);
    if (!bf16.bf16_available) {
      assert.equal(r16.code, 2, r16.stderr);
      assert.ok(r16.stderr.includes(bf16.bf16_refusal!), r16.stderr);
      return;
    }
    assert.equal(r16.code, 0, r16.stderr);
    const runF32 = path.join(dir, 'f32');
    const r32 = await train([writeConfig(dir, config('float32'), 'f32.json'), '--run-dir', runF32]);
    assert.equal(r32.code, 0, r32.stderr);

    const [e16, e32] = [(await readRun(runBf16)).events, (await readRun(runF32)).events];
    const gemm = (events: typeof e16) => (eventsOf(events, 'run_start')[0].runtime as { gemm: CpuGemm }).gemm;
    assert.equal(gemm(e32).library, 'OpenBLAS');
    assert.equal(gemm(e32).dtype, 'float32');
    assert.match(gemm(e16).library, /^oneDNN \d+\.\d+\.\d+$/);
    assert.equal(gemm(e16).dtype, 'bfloat16');
    assert.equal(gemm(e16).isa, bf16.isa);

    const loss = (events: typeof e16) => eventsOf(events, 'step').map((s) => s.loss!);
    const [l16, l32] = [loss(e16), loss(e32)];
    assert.equal(l16.length, STEPS);
    assert.equal(l32.length, STEPS);
    const gaps = l16.map((l, i) => Math.abs(l - l32[i]) / l32[i]);
    const worst = Math.max(...gaps);
    assert.ok(
      worst < MARGIN,
      `bf16's loss strays ${(100 * worst).toFixed(2)} % from float32's (step ${gaps.indexOf(worst) + 1})`,
    );
    // It learns: the last five steps' mean loss is a third below the first step's.
    const tail = l16.slice(-5).reduce((a, b) => a + b, 0) / 5;
    assert.ok(tail < (2 / 3) * l16[0], `bf16's loss went ${l16[0]} -> ${tail}`);
    // And the products really were bf16: the losses are not float32's bit for bit.
    assert.ok(worst > 0, 'the bf16 run gave float32 losses at every step');
  });
});
