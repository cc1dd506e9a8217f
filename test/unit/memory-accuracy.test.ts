// The estimator against memory measured on real GPUs (PyTorch FSDP2 / plain, from
// test/reference/measure_memory.py; format in test/fixtures/measured/README.md). Targets (issue 16):
// allocator peak median ≤ 1.5 %, every point ≤ 5 %; each phase's peak median ≤ 3 %; reserved peak
// (what nvidia-smi shows, less the context) median ≤ 5 %, every point ≤ 12 %.
// `npx tsx bench/memory-accuracy.ts` prints the per-point table behind these numbers.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CUDA_CONTEXT_BYTES } from '../../core/memory/frameworks/gpu-overheads';
import { findGpu } from '../../core/memory/gpu-presets';
import { accuracySummary, comparePoint, harnessHistory, MEASURED_FORMAT, type ErrorSummary, type MeasuredFile } from '../../core/memory/measured-comparison';
import { shapeProblem } from '../../core/memory/model-shape';

const DIR = path.join(__dirname, '..', 'fixtures', 'measured');
const fixtures = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, data: JSON.parse(readFileSync(path.join(DIR, f), 'utf8')) as MeasuredFile }));
const MiB = 1024 * 1024;

function pct(x: number): string {
  return `${(x * 100).toFixed(2)} %`;
}

function describe_(s: ErrorSummary): string {
  return `median ${pct(s.median)}, largest ${pct(s.max)} (${s.worst}) over ${s.points} points`;
}

describe('memory estimator vs memory measured on GPUs (test/fixtures/measured)', () => {
  it('has measurements, and every fixture file says where and how it was measured', () => {
    assert.ok(fixtures.length > 0, `no *.json in ${DIR}`);
    for (const { file, data } of fixtures) {
      assert.equal(data.format, MEASURED_FORMAT, `${file}: format`);
      for (const key of ['device', 'date', 'command'] as const) assert.ok(data[key], `${file}: ${key} is missing`);
      assert.ok(Array.isArray(data.points) && data.points.length >= 40, `${file}: at least 40 points`);
      for (const p of data.points) {
        assert.equal(shapeProblem(p.input.model), undefined, `${file} ${p.id}: model`);
        assert.ok(p.measured.max_memory_allocated > 0 && p.measured.max_memory_reserved >= p.measured.max_memory_allocated, `${file} ${p.id}: allocator counters`);
      }
    }
  });

  // Each point in the process it was measured in (harnessHistory: the cuBLAS workspaces made before it).
  const errors = fixtures.flatMap(({ file, data }) => {
    const history = harnessHistory(data);
    return data.points.map((p) => ({ ...comparePoint(p, history.get(p.id)), id: `${file} ${p.id}` }));
  });
  const summary = accuracySummary(errors);

  it('allocator peak (max_memory_allocated): median ≤ 1.5 %, every point ≤ 5 %', () => {
    assert.ok(summary.allocated.median <= 0.015, describe_(summary.allocated));
    assert.ok(summary.allocated.max <= 0.05, describe_(summary.allocated));
  });

  for (const phase of ['forward', 'backward', 'optimizer'] as const) {
    it(`${phase} peak: median ≤ 3 %`, () => {
      assert.ok(summary[phase].median <= 0.03, describe_(summary[phase]));
    });
  }

  it('reserved peak (max_memory_reserved): median ≤ 5 %, every point ≤ 12 %', () => {
    assert.ok(summary.reserved.median <= 0.05, describe_(summary.reserved));
    assert.ok(summary.reserved.max <= 0.12, describe_(summary.reserved));
  });

  it('the GPU preset and the CUDA context are the measured device\'s', () => {
    for (const { file, data } of fixtures) {
      if (!/H100 80GB/.test(data.device)) continue;
      assert.equal(findGpu('H100-80GB')!.memoryBytes, data.memory_total_bytes, `${file}: H100 capacity is CUDA's total`);
      // The fixture's context was measured with the 32 MiB cuBLAS workspace and cuBLASLt's 2 MiB segment in it.
      assert.equal(CUDA_CONTEXT_BYTES + 34 * MiB, data.cuda_context_bytes, `${file}: CUDA context`);
    }
  });
});
