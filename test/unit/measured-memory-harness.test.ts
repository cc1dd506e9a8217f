// The contract between the GPU memory harness (test/reference/measure_memory.py, Python) and the
// estimator (core/memory, TypeScript), checked without PyTorch: a dry run of the harness on a CPU
// (committed in test/reference/dry-run/: the real loop and writer, nothing measured) writes inputs
// the estimator reads as the point's id says, and no dry run ever sits among the measured fixtures.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import type { MemoryInput } from '../../core/memory/memory-input';
import { shapeProblem } from '../../core/memory/model-shape';

const ROOT = path.join(__dirname, '..', '..');
const DRY_RUNS = path.join(ROOT, 'test', 'reference', 'dry-run');
const MEASURED = path.join(ROOT, 'test', 'fixtures', 'measured');

interface HarnessFile {
  format: string;
  dry_run?: boolean;
  command: string;
  points: Array<{ id: string; input: MemoryInput; measured: { max_memory_allocated: number | null } }>;
  skipped: Array<{ id: string; reason: string }>;
}

const read = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ file: f, data: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as HarnessFile }));

describe('GPU memory harness ↔ estimator (test/reference/dry-run)', () => {
  const dryRuns = read(DRY_RUNS);

  it('a dry run says so, names its command, measures nothing and says why each skipped point was skipped', () => {
    assert.ok(dryRuns.length > 0, `no dry run in ${DRY_RUNS}`);
    for (const { file, data } of dryRuns) {
      assert.equal(data.format, 'fsdp-studio/measured-memory/v1', file);
      assert.equal(data.dry_run, true, file);
      assert.match(data.command, /measure_memory\.py/);
      assert.ok(data.points.length > 0, `${file}: no point ran`);
      for (const p of data.points) assert.equal(p.measured.max_memory_allocated, null, `${file} ${p.id}`);
      for (const s of data.skipped)
        assert.match(s.reason, /needs .*PyTorch >= |out of memory|time budget/, `${file} ${s.id}`);
    }
  });

  it('every input is one the estimator reads, as its id says', () => {
    for (const { file, data } of dryRuns) {
      for (const { id, input } of data.points) {
        const [, strategy, precision, ac, seq, mb] = id.split('/');
        assert.equal(shapeProblem(input.model), undefined, `${file} ${id}`);
        assert.equal(input.strategy, strategy === 'fsdp2' ? 'FULL_SHARD' : 'NO_SHARD', id);
        assert.equal(input.precision.param, precision === 'bf16' ? 'bfloat16' : 'float32', id);
        assert.equal(
          input.checkpointing.policy,
          { 'ac-none': 'none', 'ac-every': 'every_n', 'ac-selective': 'selective' }[ac],
          id,
        );
        assert.equal(`s${input.seqLen}/b${input.microBatch}`, `${seq}/${mb}`, id);
        const peak = estimateMemory(input).allocatorPeak;
        assert.ok(Number.isFinite(peak) && peak > 0, `${id}: estimated peak ${peak}`);
      }
    }
  });

  it('no dry run is among the measured fixtures', () => {
    for (const { file, data } of read(MEASURED)) assert.notEqual(data.dry_run, true, `${file} is a dry run`);
  });
});
