import assert from 'node:assert/strict';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RunLogParser, RunLogReader, MAX_LINE_BYTES, PROBLEMS_PER_PUSH } from '../../core/protocol/run-log-reader';
import type { MetricsEvent } from '../../core/protocol/metrics';

function stepEvent(step: number, extra: Record<string, unknown> = {}): MetricsEvent {
  return {
    v: 1,
    type: 'step',
    time: 1_700_000_000 + step,
    step,
    loss: 3 - step / 1000,
    lr: 1e-3,
    grad_norm: 1.5,
    tokens_per_s: 1000,
    step_ms: 12.5,
    mem_peak: 1 << 20,
    ...extra,
  } as MetricsEvent;
}
const line = (e: unknown) => `${JSON.stringify(e)}\n`;

describe('RunLogParser', () => {
  it('returns each complete line once and holds back a partial last line until its newline', () => {
    const p = new RunLogParser();
    const text = line(stepEvent(1)) + line(stepEvent(2));
    const cut = text.length - 10;
    const first = p.push(Buffer.from(text.slice(0, cut)));
    assert.deepEqual(
      first.entries.map((e) => (e.event as { step: number }).step),
      [1],
    );
    assert.equal(first.offset, line(stepEvent(1)).length, 'offset stops at the end of the last complete line');
    assert.equal(p.pendingLength, cut - line(stepEvent(1)).length);
    const second = p.push(Buffer.from(text.slice(cut)));
    assert.deepEqual(
      second.entries.map((e) => (e.event as { step: number }).step),
      [2],
    );
    assert.equal(second.offset, Buffer.byteLength(text));
    assert.equal(second.entries[0].offset, line(stepEvent(1)).length);
  });

  it('decodes multi-byte UTF-8 split across chunks', () => {
    const p = new RunLogParser();
    const bytes = Buffer.from(line({ v: 1, type: 'log', time: 1, level: 'info', msg: 'Größe 日本 ✓' }));
    const split = bytes.indexOf(Buffer.from('日')) + 1; // inside a 3-byte character
    assert.equal(p.push(bytes.subarray(0, split)).entries.length, 0);
    const { entries, problems } = p.push(bytes.subarray(split));
    assert.deepEqual(problems, []);
    assert.equal((entries[0].event as { msg: string }).msg, 'Größe 日本 ✓');
  });

  it('reports malformed lines with their offsets and keeps going', () => {
    const p = new RunLogParser();
    const good = line(stepEvent(1));
    const bad1 = '{"v":1,"type":"step","step":2\n';
    const bad2 = line({ v: 1, type: 'step', time: 1, step: 3 }); // missing required fields
    const bad3 = line({ v: 2, type: 'step' });
    const bad4 = line({ v: 1, type: 'teleport', time: 1 });
    const bad5 = '[1,2,3]\n';
    const { entries, problems } = p.push(Buffer.from(good + bad1 + bad2 + bad3 + bad4 + bad5 + good));
    assert.equal(entries.length, 2);
    assert.equal(problems.length, 5);
    assert.equal(problems[0].offset, good.length);
    assert.match(problems[0].message, /not valid JSON/);
    assert.match(problems[1].message, /step event: .*loss/);
    assert.match(problems[2].message, /unsupported protocol version v=2/);
    assert.match(problems[3].message, /unknown event type "teleport"/);
    assert.match(problems[4].message, /not a JSON object/);
  });

  it('skips a runaway line longer than the limit without holding it in memory', () => {
    const p = new RunLogParser();
    const chunk = Buffer.alloc(1 << 20, 0x61);
    let problems = 0;
    for (let sent = 0; sent <= MAX_LINE_BYTES; sent += chunk.length) problems += p.push(chunk).problems.length;
    assert.equal(problems, 1);
    assert.ok(p.pendingLength > MAX_LINE_BYTES);
    const after = p.push(Buffer.from(`\n${line(stepEvent(7))}`));
    assert.deepEqual(
      after.entries.map((e) => (e.event as { step: number }).step),
      [7],
    );
  });

  it('counts the problems of a flood past PROBLEMS_PER_PUSH in one note, still returning every event among them (issue 40 item 4)', () => {
    const p = new RunLogParser();
    const lines: string[] = [];
    const events: number[] = [];
    for (let i = 0; i < 3000; i++) {
      if (i % 100 === 0) {
        events.push(i);
        // A byte-order mark before an event: trimmed by the parser, so still read once problems are only counted.
        lines.push(`${i % 200 === 0 ? '\ufeff' : ''}${JSON.stringify(stepEvent(i))}`);
      } else lines.push(i % 3 === 0 ? '' : i % 3 === 1 ? `epoch 0 | ${i}/400 batches` : '\u0000\u00ff{"binary":');
    }
    const batch = p.push(Buffer.from(lines.join('\n') + '\n'));
    assert.deepEqual(
      batch.entries.map((e) => (e.event as { step: number }).step),
      events,
    );
    const bad = lines.filter((l, i) => l !== '' && i % 100 !== 0).length;
    assert.equal(batch.problems.length, PROBLEMS_PER_PUSH + 1);
    const note = batch.problems[PROBLEMS_PER_PUSH];
    assert.match(
      note.message,
      new RegExp(`^${bad - PROBLEMS_PER_PUSH} more lines not read .* from byte ${note.offset}; skipped$`),
    );
    assert.ok(note.offset > batch.problems[PROBLEMS_PER_PUSH - 1].offset);
  });

  it('survives 10,000 randomly corrupted lines: never throws, never returns an event twice, keeps every intact one', () => {
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const pieces: Buffer[] = [];
    const intactSteps: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      let text = JSON.stringify(stepEvent(i));
      const corrupt = rand() < 0.5;
      const mode = Math.floor(rand() * 5);
      const at = Math.floor(rand() * text.length);
      if (corrupt) {
        if (mode === 0)
          text = text.slice(0, Math.max(1, at)); // truncated
        else if (mode === 1)
          text = text.slice(0, at) + String.fromCharCode(0x20 + Math.floor(rand() * 0x5f)) + text.slice(at + 1); // character replaced
        else if (mode === 2)
          text = text.replace('"loss":', '"loss":"x"+'); // invalid JSON
        else if (mode === 3) text = text.replace(/"step":\d+/, '"step":"s"'); // valid JSON, wrong type
      }
      const bytes = Buffer.from(`${text}\n`, 'utf8');
      if (corrupt && mode === 4) bytes[Math.min(at, bytes.length - 2)] = 0xff; // invalid UTF-8
      pieces.push(bytes);
      // Whether a corrupted line still happens to be a valid event is the reader's call; the lines
      // left untouched must all come back.
      if (!corrupt) intactSteps.push(i);
    }
    const all = Buffer.concat(pieces);
    const p = new RunLogParser();
    const seen = new Map<number, number>();
    let problems = 0;
    for (let pos = 0; pos < all.length;) {
      const n = 1 + Math.floor(rand() * 4096);
      const batch = p.push(all.subarray(pos, pos + n));
      pos += n;
      problems += batch.problems.length;
      for (const e of batch.entries) {
        assert.ok(!seen.has(e.offset), `event at offset ${e.offset} returned twice`);
        seen.set(e.offset, (e.event as { step: number }).step);
      }
    }
    const returned = [...seen.values()];
    for (const s of intactSteps) assert.ok(returned.includes(s), `intact step ${s} was lost`);
    assert.equal(seen.size + problems, 10_000, 'every line is either an event or a reported problem');
    assert.equal(p.offset, all.length);
  });
});

describe('RunLogReader', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'runlog-'))));
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('reads what was appended since the last read, and resumes from a saved offset without doubles', async () => {
    const file = path.join(dir, 'metrics.jsonl');
    await writeFile(file, line(stepEvent(1)) + line(stepEvent(2)));
    const reader = new RunLogReader(file);
    assert.equal((await reader.read()).entries.length, 2);
    assert.equal((await reader.read()).entries.length, 0, 'nothing new, nothing returned');
    const half = JSON.stringify(stepEvent(3));
    await appendFile(file, half.slice(0, 20));
    assert.equal((await reader.read()).entries.length, 0, 'partial line waits');
    const saved = reader.offset;
    await appendFile(file, half.slice(20) + '\n' + line(stepEvent(4)));
    const more = await reader.read(7); // tiny chunks exercise line reassembly
    assert.deepEqual(
      more.entries.map((e) => (e.event as { step: number }).step),
      [3, 4],
    );
    // A new reader (after a reload) starting at the saved offset sees exactly the rest.
    const resumed = new RunLogReader(file, saved);
    assert.deepEqual(
      (await resumed.read()).entries.map((e) => (e.event as { step: number }).step),
      [3, 4],
    );
  });

  it('reads at most maxBytesPerRead a read and says it is behind, so a follower takes a burst in pieces (issue 40 item 4)', async () => {
    const file = path.join(dir, 'metrics.jsonl');
    const text = Array.from({ length: 50 }, (_, i) => line(stepEvent(i))).join('');
    await writeFile(file, text);
    const reader = new RunLogReader(file, 0, 1000);
    const steps: number[] = [];
    let reads = 0;
    do {
      const before = reader.offset;
      const batch = await reader.read(64);
      reads++;
      assert.ok(batch.offset <= reads * 1000, `${reads} reads reached byte ${batch.offset}`);
      assert.ok(batch.offset >= before);
      steps.push(...batch.entries.map((e) => (e.event as { step: number }).step));
    } while (reader.behind);
    assert.deepEqual(
      steps,
      Array.from({ length: 50 }, (_, i) => i),
    );
    assert.ok(reads >= Buffer.byteLength(text) / 1000, `${reads} reads`);
    assert.equal(reader.offset, Buffer.byteLength(text));
    assert.equal(new RunLogReader(file).behind, false);
  });

  it('treats a missing file as empty and reports a file that shrank', async () => {
    const file = path.join(dir, 'metrics.jsonl');
    const reader = new RunLogReader(file);
    assert.deepEqual((await reader.read()).entries, []);
    await writeFile(file, line(stepEvent(1)) + line(stepEvent(2)));
    await reader.read();
    await writeFile(file, line(stepEvent(1)));
    const { problems } = await reader.read();
    assert.equal(problems.length, 1);
    assert.match(problems[0].message, /shrank/);
  });
});

// Issue 19, item 10: one rule for a huge line whatever the read size, and a file truncated or
// rewritten under the reader read again from its start without dropping or doubling events.
describe('RunLogReader: huge lines and files changed under it', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'runlog-'))));
  afterEach(async () => rm(dir, { recursive: true, force: true }));
  const steps = (b: { entries: Array<{ event: unknown }> }) => b.entries.map((e) => (e.event as { step: number }).step);

  for (const chunk of [1 << 20, 32 << 20]) {
    it(`skips and reports a 10 MB line the same way with ${chunk >> 20} MB reads`, async () => {
      const file = path.join(dir, 'metrics.jsonl');
      const huge = line({ ...stepEvent(2), note: 'x'.repeat(10 << 20) });
      await writeFile(file, line(stepEvent(1)) + huge + line(stepEvent(3)));
      const batch = await new RunLogReader(file).read(chunk);
      assert.deepEqual(steps(batch), [1, 3]);
      assert.deepEqual(
        batch.problems.map((p) => [p.offset, p.message]),
        [[line(stepEvent(1)).length, `line longer than ${MAX_LINE_BYTES} bytes; skipped`]],
      );
    });
  }

  it('reads a file truncated to its first lines again, returning only the events appended since', async () => {
    const file = path.join(dir, 'metrics.jsonl');
    const first = [1, 2, 3, 4, 5, 6].map((s) => line(stepEvent(s)));
    await writeFile(file, first.join(''));
    const reader = new RunLogReader(file);
    assert.deepEqual(steps(await reader.read()), [1, 2, 3, 4, 5, 6]);
    await writeFile(file, first.slice(0, 3).join('') + line(stepEvent(7)) + line(stepEvent(8)));
    const again = await reader.read();
    assert.deepEqual(steps(again), [7, 8]);
    assert.match(
      again.problems[0].message,
      /^the file shrank from \d+ to \d+ bytes \(truncated or replaced\); read again from its start/,
    );
    await appendFile(file, line(stepEvent(9)));
    assert.deepEqual(steps(await reader.read()), [9]);
  });

  it('reads a file emptied and refilled past its old size again, instead of resuming mid-line', async () => {
    const file = path.join(dir, 'metrics.jsonl');
    await writeFile(file, line(stepEvent(1)) + line(stepEvent(2)));
    const reader = new RunLogReader(file);
    assert.deepEqual(steps(await reader.read()), [1, 2]);
    await writeFile(
      file,
      [10, 11, 12, 13].map((s) => line(stepEvent(s, { note: 'a longer line than before' }))).join(''),
    );
    const batch = await reader.read();
    assert.deepEqual(steps(batch), [10, 11, 12, 13]);
    assert.deepEqual(
      batch.problems.map((p) => p.message),
      ['the file was rewritten under the reader; read again from its start, returning only events not returned yet'],
    );
  });

  it('goes on from the last complete line when a resumed writer cuts an unterminated last line', async () => {
    const file = path.join(dir, 'metrics.jsonl');
    const complete = line(stepEvent(1)) + line(stepEvent(2));
    await writeFile(file, complete + JSON.stringify(stepEvent(3)).slice(0, 40));
    const reader = new RunLogReader(file);
    assert.deepEqual(steps(await reader.read()), [1, 2]);
    // The resumed trainer truncates the partial line, then appends (longer than what was cut).
    await writeFile(
      file,
      complete +
        line(stepEvent(3, { time: 1_700_000_100, note: 'written again after the resume' })) +
        line(stepEvent(4, { time: 1_700_000_101 })),
    );
    const batch = await reader.read();
    assert.deepEqual(steps(batch), [3, 4]);
    assert.equal(
      (batch.entries[0].event as { time: number }).time,
      1_700_000_100,
      'step 3 as written again, not spliced onto the cut bytes',
    );
    assert.deepEqual(batch.problems, []);
  });
});
