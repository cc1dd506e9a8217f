// TensorBoard event files in: real files written by TensorBoard's own writer (PyTorch's
// SummaryWriter, from a public repository's test data), then truncated, corrupted and growing
// variants, and tensor-encoded scalars.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrowingFileReader } from '../../runs/watch/transports/growing-file';
import { crc32c } from '../../runs/watch/decoders/tensorboard/crc32c';
import {
  tensorBoardDecoder,
  TensorBoardDecoder,
  type TensorBoardScalar,
} from '../../runs/watch/decoders/tensorboard/tensorboard-decoder';
import {
  eventRecord,
  fileVersionRecord,
  frameRecord,
  scalarRecord,
  tensorScalarRecord,
} from '../harness/tensorboard-file';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'tensorboard', 'janosh-tensorboard-reducer', 'tests', 'runs');

function fixture(run: string): Buffer {
  const dir = path.join(FIXTURES, run, 'run_1');
  return readFileSync(path.join(dir, readdirSync(dir)[0]));
}

function decodeAll(bytes: Uint8Array, chunk = bytes.length) {
  const d = new TensorBoardDecoder();
  const entries: TensorBoardScalar[] = [];
  const problems: string[] = [];
  for (let i = 0; i < bytes.length; i += chunk) {
    const b = d.push(bytes.subarray(i, i + chunk));
    entries.push(...b.entries);
    problems.push(...b.problems.map((p) => `${p.offset}: ${p.message}`));
  }
  return { entries, problems, offset: d.offset };
}

describe('TensorBoard event files', () => {
  it('CRC-32C is the Castagnoli checksum (RFC 3720 test vector)', () => {
    assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
    assert.equal(crc32c(Buffer.alloc(32)), 0x8a9136aa);
  });

  it('reads every scalar of a file SummaryWriter wrote: tags, steps, values and wall times', () => {
    const bytes = fixture('strict');
    const { entries, problems, offset } = decodeAll(bytes);
    assert.deepEqual(problems, []);
    assert.equal(offset, bytes.length);
    assert.equal(entries.length, 100);
    assert.deepEqual([...new Set(entries.map((e) => e.tag))], ['strict/foo']);
    assert.deepEqual(
      entries.map((e) => e.step),
      Array.from({ length: 100 }, (_, i) => 5 * i),
    );
    // torch.rand() + 1 for run_1; the first two values, as the file holds them (float32).
    assert.equal(entries[0].value, Math.fround(1.4962565898895264));
    assert.equal(entries[1].value, Math.fround(1.7682218551635742));
    assert.ok(entries.every((e) => e.value >= 1 && e.value < 2));
    assert.ok(Math.abs(entries[0].wallTime - 1622543341.758558) < 1e-6);
    assert.ok(entries.every((e, i) => i === 0 || e.wallTime >= entries[i - 1].wallTime));
  });

  it('gives the same records whatever the chunking (one byte at a time included)', () => {
    const bytes = fixture('lax');
    const whole = decodeAll(bytes);
    assert.equal(new Set(whole.entries.map((e) => e.tag)).size, 3);
    assert.equal(whole.entries.length, 3 * 110);
    for (const chunk of [1, 7, 4096]) assert.deepEqual(decodeAll(bytes, chunk).entries, whole.entries);
  });

  it('keeps duplicate steps in file order (the history lets the later replace the earlier)', () => {
    const { entries } = decodeAll(fixture('duplicate_steps'));
    const foo = entries.filter((e) => e.tag === 'dup_steps/foo').map((e) => e.step);
    assert.equal(foo.length, 100 + 110);
    assert.equal(foo[100], 90, 'the second pass starts again at step 90');
  });

  it('a truncated last record waits for its end; then it is read once', () => {
    const bytes = fixture('strict');
    for (const cut of [bytes.length - 1, bytes.length - 20, 30]) {
      const d = new TensorBoardDecoder();
      const first = d.push(bytes.subarray(0, cut));
      assert.deepEqual(first.problems, []);
      assert.ok(first.offset <= cut);
      const rest = d.push(bytes.subarray(cut));
      assert.equal(first.entries.length + rest.entries.length, 100);
      assert.equal(rest.offset, bytes.length);
    }
  });

  it('a record whose data CRC is wrong is reported and skipped; the records after it are read', () => {
    const bytes = Buffer.from(fixture('strict'));
    // Record 3 (the third scalar) starts after the file_version record and two scalar records.
    const starts: number[] = [];
    for (let at = 0; at < bytes.length; at += 12 + Number(bytes.readBigUInt64LE(at)) + 4) starts.push(at);
    bytes[starts[3] + 20] ^= 0xff;
    const { entries, problems } = decodeAll(bytes);
    assert.equal(entries.length, 99);
    assert.equal(problems.length, 1);
    assert.match(problems[0], new RegExp(`^${starts[3]}: record data CRC mismatch`));
    assert.ok(!entries.some((e) => e.step === 10), 'the step of the bad record is missing, no other');
  });

  it('a corrupted length is reported once and reading picks up at the next valid record', () => {
    const bytes = Buffer.from(fixture('strict'));
    const second = 12 + Number(bytes.readBigUInt64LE(0)) + 4;
    bytes[second + 2] ^= 0x40; // the length of the first scalar record, not its CRC
    const { entries, problems, offset } = decodeAll(bytes, 100);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /header CRC mismatch/);
    assert.equal(entries.length, 99);
    assert.equal(entries[0].step, 5);
    assert.equal(offset, bytes.length);
  });

  it('garbage and empty input never throw', () => {
    const junk = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 2654435761) & 0xff));
    assert.doesNotThrow(() => decodeAll(junk, 333));
    // A valid frame around bytes that are not an Event.
    const { entries, problems } = decodeAll(frameRecord(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])));
    assert.equal(entries.length, 0);
    assert.match(problems[0] ?? '', /not a TensorBoard Event/);
    assert.deepEqual(decodeAll(Buffer.alloc(0)).entries, []);
  });

  it('reads tensor-encoded scalars (TF2, add_scalar(new_style=True)) by the metadata of their first value, and skips other plugins', () => {
    const bytes = Buffer.concat([
      fileVersionRecord(100),
      tensorScalarRecord('eval/accuracy', 1, 0.25, 101, true),
      tensorScalarRecord('eval/accuracy', 2, 0.5, 102, false),
      eventRecord({
        wall_time: 103,
        step: 2,
        summary: {
          value: [
            {
              tag: 'weights',
              metadata: { plugin_data: { plugin_name: 'histograms' } },
              tensor: { dtype: 2, tensor_shape: { dim: [{ size: 2 }, { size: 3 }] }, double_val: [0, 1, 2, 3, 4, 5] },
            },
          ],
        },
      }),
      eventRecord({
        wall_time: 104,
        step: 2,
        summary: {
          value: [
            {
              tag: 'notes',
              metadata: { plugin_data: { plugin_name: 'text' } },
              tensor: { dtype: 7, tensor_shape: {} },
            },
          ],
        },
      }),
      eventRecord({
        wall_time: 105,
        step: 3,
        summary: {
          value: [
            {
              tag: 'd',
              tensor: { dtype: 2, tensor_shape: {}, tensor_content: Buffer.from(new Float64Array([2.5]).buffer) },
            },
          ],
        },
      }),
      scalarRecord('train/loss', 3, Number.NaN, 106),
    ]);
    const { entries, problems } = decodeAll(bytes, 9);
    assert.deepEqual(problems, []);
    const got = entries.map((e) => [e.tag, e.step, e.value, e.wallTime]);
    assert.deepEqual(got.slice(0, 3), [
      ['eval/accuracy', 1, 0.25, 101],
      ['eval/accuracy', 2, 0.5, 102],
      ['d', 3, 2.5, 105],
    ]);
    assert.equal(got[3][0], 'train/loss');
    assert.ok(Number.isNaN(got[3][2]), 'a NaN logged is a NaN read');
  });

  it("a reconnect's fresh decoder for the same file still knows which tensor tags are scalars", () => {
    const first = tensorScalarRecord('acc', 1, 0.1, 1, true);
    const second = tensorScalarRecord('acc', 2, 0.2, 2, false);
    const factory = tensorBoardDecoder();
    const d1 = factory(0);
    assert.equal(d1.push(first).entries.length, 1);
    const d2 = factory(d1.offset);
    assert.deepEqual(
      d2.push(second).entries.map((e) => e.value),
      [Math.fround(0.2)],
    );
  });

  it('follows a file growing while it is read, from a byte offset, every record once', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-tb-'));
    try {
      const file = path.join(dir, 'events.out.tfevents.1.h.1.0');
      writeFileSync(file, fileVersionRecord(1));
      const reader = new GrowingFileReader(file, tensorBoardDecoder());
      const seen: number[] = [];
      for (let step = 1; step <= 40; step++) {
        const rec = scalarRecord('train/loss', step, step / 10, step);
        // Half a record now, the rest with the next one: the reader sees torn writes.
        appendFileSync(file, rec.subarray(0, 15));
        seen.push(...(await reader.read()).entries.map((e) => e.step));
        appendFileSync(file, rec.subarray(15));
        if (step % 3 === 0) seen.push(...(await reader.read()).entries.map((e) => e.step));
      }
      seen.push(...(await reader.read()).entries.map((e) => e.step));
      assert.deepEqual(
        seen,
        Array.from({ length: 40 }, (_, i) => i + 1),
      );
      // A second reader from the saved offset reads only what comes after.
      const resumed = new GrowingFileReader(file, tensorBoardDecoder(), reader.offset);
      appendFileSync(file, scalarRecord('train/loss', 41, 4.1, 41));
      assert.deepEqual(
        (await resumed.read()).entries.map((e) => e.step),
        [41],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
