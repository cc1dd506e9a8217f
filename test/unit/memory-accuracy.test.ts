// The estimator against memory measured on real GPUs (PyTorch FSDP2 / plain, from issue 9's
// harness; format in test/fixtures/measured/README.md). Target: median absolute error ≤ 3 %,
// largest ≤ 8 %, on torch.cuda.max_memory_allocated. Pending, with the reason, while no fixtures exist.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import type { MemoryInput } from '../../core/memory/memory-input';
import { shapeProblem } from '../../core/memory/model-shape';

const DIR = path.join(__dirname, '..', 'fixtures', 'measured');
const FORMAT = 'fsdp-studio/measured-memory/v1';

interface MeasuredPoint {
  id: string;
  input: MemoryInput;
  measured: { max_memory_allocated: number; max_memory_reserved: number };
}

interface MeasuredFile {
  format: string;
  device: string;
  date: string;
  command: string;
  points: MeasuredPoint[];
}

function readFixtures(): Array<{ file: string; data: MeasuredFile }> {
  if (!existsSync(DIR)) return [];
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ file: f, data: JSON.parse(readFileSync(path.join(DIR, f), 'utf8')) as MeasuredFile }));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

describe('memory estimator vs memory measured on GPUs (test/fixtures/measured)', () => {
  const fixtures = readFixtures();

  it('every fixture file follows the format and says where and how it was measured', function () {
    if (fixtures.length === 0) {
      this.test!.title += ' — pending: no measured fixtures yet (issue 9 records them on a GPU machine; none was lent to this session)';
      this.skip();
    }
    for (const { file, data } of fixtures) {
      assert.equal(data.format, FORMAT, `${file}: format`);
      for (const key of ['device', 'date', 'command'] as const) assert.ok(data[key], `${file}: ${key} is missing`);
      assert.ok(Array.isArray(data.points) && data.points.length > 0, `${file}: no points`);
      for (const p of data.points) {
        assert.equal(shapeProblem(p.input.model), undefined, `${file} ${p.id}: model`);
        assert.ok(p.measured.max_memory_allocated > 0, `${file} ${p.id}: max_memory_allocated`);
      }
    }
  });

  it('allocator peak: median absolute error ≤ 3 %, largest ≤ 8 %', function () {
    const points = fixtures.flatMap(({ file, data }) => data.points.map((p) => ({ file, ...p })));
    if (points.length === 0) {
      this.test!.title += ' — pending: no measured fixtures yet (see test/fixtures/measured/README.md)';
      this.skip();
    }
    const errors = points.map((p) => {
      const predicted = estimateMemory(p.input).allocatorPeak;
      return { id: `${p.file} ${p.id}`, predicted, measured: p.measured.max_memory_allocated, error: Math.abs(predicted - p.measured.max_memory_allocated) / p.measured.max_memory_allocated };
    });
    const worst = [...errors].sort((a, b) => b.error - a.error).slice(0, 5).map((e) => `${e.id}: predicted ${e.predicted}, measured ${e.measured} (${(e.error * 100).toFixed(1)} %)`);
    const med = median(errors.map((e) => e.error));
    assert.ok(med <= 0.03, `median error ${(med * 100).toFixed(2)} % over ${errors.length} points; worst:\n${worst.join('\n')}`);
    assert.ok(errors.every((e) => e.error <= 0.08), `points over 8 %:\n${worst.join('\n')}`);
  });
});
