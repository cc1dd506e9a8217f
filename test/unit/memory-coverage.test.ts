// Where the memory estimate has been held to a GPU, and what it says elsewhere
// (core/memory/measured-coverage.ts): the list of measured shapes is the committed fixtures', a
// shape near them is estimated as measured, and one far from them (another code path, or more than
// FAR_FACTOR outside on a size) is unsure, with a range whose top decides the verdict.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory, UNSURE_SEGMENTS } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import type { MeasuredFile, ReservedFile } from '../../core/memory/measured-comparison';
import { farFromMeasured, MEASURED, measuredPath } from '../../core/memory/measured-coverage';
import type { MemoryInput } from '../../core/memory/memory-input';
import { summaryLine, verdictText } from '../../core/memory/summary';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const inputs = (dir: string) =>
  readdirSync(path.join(FIXTURES, dir))
    .filter((f) => f.endsWith('.json'))
    .flatMap((f) =>
      (JSON.parse(readFileSync(path.join(FIXTURES, dir, f), 'utf8')) as MeasuredFile | ReservedFile).points.map(
        (p) => p.input as MemoryInput,
      ),
    );
const measuredInputs = [...inputs('measured'), ...inputs('measured-reserved')];
const key = (s: { path: string; dModel: number; nLayers: number; seqLen: number; microBatch: number; vocab: number }) =>
  `${s.path} d${s.dModel} l${s.nLayers} s${s.seqLen} b${s.microBatch} v${s.vocab}`;

/** A measured point (issue 29's first) moved along one axis. */
function near(over: Partial<MemoryInput> = {}, model: Partial<MemoryInput['model']> = {}): MemoryInput {
  const base = inputs('measured-reserved')[0];
  return { ...base, ...over, model: { ...base.model, ...model }, gpu: findGpu('H100-80GB')! };
}

describe('memory estimate: where it has been measured, and unsure elsewhere', () => {
  it('lists exactly the committed measurements', () => {
    const fromFiles = measuredInputs.map((i) => {
      const p = measuredPath(i);
      assert.ok('path' in p, `a measured input on no measured path: ${JSON.stringify(p)}`);
      return key({
        path: p.path,
        dModel: i.model.dModel,
        nLayers: i.model.nLayers,
        seqLen: i.seqLen,
        microBatch: i.microBatch,
        vocab: i.model.vocabSize,
      });
    });
    assert.deepEqual([...MEASURED.map(key)].sort(), fromFiles.sort());
  });

  it('is not unsure on any measured point, nor within a factor of 2 of one on each size', () => {
    for (const i of measuredInputs)
      assert.equal(
        farFromMeasured(i),
        undefined,
        key({
          path: 'x',
          dModel: i.model.dModel,
          nLayers: i.model.nLayers,
          seqLen: i.seqLen,
          microBatch: i.microBatch,
          vocab: i.model.vocabSize,
        }),
      );
    assert.equal(
      farFromMeasured(near({}, { dModel: 2560, nHeads: 40, nKvHeads: 40, ffnHidden: 10240 })),
      undefined,
      'd2560 is 2 × d1280',
    );
    assert.equal(estimateMemory(near({ microBatch: 4 })).unsure, undefined);
  });

  it('is unsure beyond a factor of 2 on a size, saying which', () => {
    assert.match(
      farFromMeasured(near({}, { dModel: 4096, nHeads: 64, nKvHeads: 64, ffnHidden: 16384 }))!,
      /^width 4096 is more than 2× outside the measured 512–1280$/,
    );
    assert.match(farFromMeasured(near({ seqLen: 8192 }, { positionEmbeddings: 8192 }))!, /^sequence length 8192/);
    assert.match(farFromMeasured(near({}, { nLayers: 80 }))!, /^depth 80/);
  });

  it('is unsure on code paths no measurement ran', () => {
    assert.match(
      farFromMeasured(near({}, { mlp: 'swiglu', norm: 'rmsnorm', positionEmbeddings: 0 }))!,
      /only GPT-2-style blocks/,
    );
    assert.match(farFromMeasured(near({ nprocPerNode: 8 }))!, /several ranks/);
    assert.match(farFromMeasured(near({ attention: 'eager' }))!, /fused attention/);
    assert.match(farFromMeasured(near({ checkpointing: { policy: 'every_n', everyN: 2 } }))!, /every n > 1/);
    assert.match(farFromMeasured(near({ gradAccumSteps: 4 }))!, /gradient accumulation/);
    assert.match(farFromMeasured({ ...near(), device: 'cpu' })!, /only PyTorch on a GPU/);
  });

  it(`gives a range of ± ${UNSURE_SEGMENTS} of the replay's largest segments (never below the allocated peak) and judges the fit by its top`, () => {
    const far = near({ microBatch: 32 }); // 65536 tokens: 4 × the most measured
    const e = estimateMemory(far);
    assert.ok(e.unsure, 'unsure');
    assert.match(e.unsure.why, /^tokens per micro-batch 65536/);
    const band = UNSURE_SEGMENTS * e.largestSegment!;
    assert.equal(e.unsure.high, e.peak.total + band);
    assert.equal(e.unsure.low, e.peak.total - Math.min(band, e.reservedPeak! - e.allocatorPeak));
    assert.ok(e.unsure.low >= e.peak.total - (e.reservedPeak! - e.allocatorPeak));
    assert.equal(e.fit!.headroomBytes, e.fit!.gpu.memoryBytes - e.unsure.high, 'the verdict is on the top');
    assert.equal(e.fit!.atRangeTop, true);
    assert.match(
      summaryLine(e),
      / — unsure, [\d.]+–[\d.]+ GiB \(tokens per micro-batch 65536 is more than 2× outside the measured 512–16384\)/,
    );
  });

  it('says "may not fit" when the estimate fits but the range\'s top does not, and "fits" only when the top fits', () => {
    const e = estimateMemory(near({ microBatch: 32 }));
    const between = {
      ...e.fit!.gpu,
      memoryBytes: Math.round((e.peak.total + e.unsure!.high) / 2),
      name: 'a GPU between the two',
    };
    const m = estimateMemory({ ...near({ microBatch: 32 }), gpu: between });
    assert.equal(m.fit!.fits, false);
    assert.match(verdictText(m)!, /^may not fit a GPU between the two \(the range's top is [\d.]+ (GiB|MiB) over\)$/);
    const roomy = estimateMemory({
      ...near({ microBatch: 32 }),
      gpu: { ...between, memoryBytes: e.unsure!.high + 1, name: 'roomy' },
    });
    assert.equal(verdictText(roomy), 'fits roomy');
    const small = estimateMemory({
      ...near({ microBatch: 32 }),
      gpu: { ...between, memoryBytes: e.peak.total - 1, name: 'small' },
    });
    assert.match(verdictText(small)!, /^does not fit small/);
  });
});
