// The dashboard's log tab, host side, against real files on this machine and over a real sshd on
// 127.0.0.1: the tail of a long log (from a line start), then what is appended, each byte once;
// whole characters only.
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalMachine } from '../../runs/machines/local-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { RunOutputTail, textLines, type OutputChunk } from '../../extension/webviews/run-output-tail';
import { LoopbackSshd } from '../harness/sshd';
import { until } from '../harness/until';

describe('run output tail (the Log tab)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-output-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('shows the end of a long log from a line start, then follows what is appended', async () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i} ${'x'.repeat(20)}`);
    writeFileSync(path.join(dir, 'stderr.log'), `${lines.join('\n')}\n`);
    const chunks: OutputChunk[] = [];
    const tail = new RunOutputTail(new LocalMachine(), dir, (c) => chunks.push(c));
    tail.follow();
    try {
      const text = (stream: string) => chunks.filter((c) => c.stream === stream).map((c) => c.text).join('');
      await until('the tail', () => text('stderr').includes('line 4999 '), 10_000);
      const shown = text('stderr').split('\n').filter(Boolean);
      assert.match(shown[0], /^line \d+ x{20}$/, 'starts at a whole line');
      assert.equal(shown.at(-1), lines[4999]);
      assert.ok(shown.length < 5000 && shown.length > 1000, `${shown.length} lines of the last 64 KiB`);
      assert.match(chunks.find((c) => c.stream === 'stderr' && c.note)!.note!, /^… the first \d+ KiB are in .*stderr\.log$/);
      assert.ok(chunks.some((c) => c.stream === 'stdout' && c.reset), 'stdout, absent, is shown empty');

      appendFileSync(path.join(dir, 'stdout.log'), 'hello ');
      appendFileSync(path.join(dir, 'stdout.log'), 'wörld\nsecond');
      await until('stdout', () => text('stdout') === 'hello wörld\n', 10_000);
      appendFileSync(path.join(dir, 'stdout.log'), ' line\n');
      await until('the rest of the line', () => text('stdout') === 'hello wörld\nsecond line\n', 10_000);
    } finally {
      tail.stop();
    }
  });

  it('decodes complete lines only, and never splits a character of an over-long line', () => {
    const d = textLines(100);
    assert.deepEqual(d.push(Buffer.from('ab')).entries, []);
    assert.deepEqual(d.push(Buffer.from('c\nde')).entries, ['abc\n']);
    assert.equal(d.offset, 104);
    const long = Buffer.from(`${'é'.repeat(40_000)}`);
    const e = textLines(0);
    const out = e.push(long.subarray(0, 70_001)).entries.join('');
    assert.ok(out.length > 0 && !out.includes('\ufffd'), 'whole characters');
    assert.equal(Buffer.byteLength(out) % 2, 0);
  });

  describe('over ssh', function () {
    this.timeout(60_000);
    let sshd: LoopbackSshd;
    before(async () => {
      sshd = await LoopbackSshd.start();
    });
    after(async () => {
      await sshd?.stop();
    });

    it('reads a remote log from an offset with its size, and follows it through the reconnecting tail', async () => {
      const ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
      // A folder name a shell would misread.
      const runDir = path.join(dir, `it's a "run"; $(touch pwned)`);
      assert.deepEqual(await ssh.readFileFrom(path.join(runDir, 'stdout.log'), 0, 100), { data: Buffer.alloc(0), size: 0 }, 'absent: empty');
      mkdirSync(runDir);
      writeFileSync(path.join(runDir, 'stdout.log'), 'first line\nsecond line\n');
      const { data, size } = await ssh.readFileFrom(path.join(runDir, 'stdout.log'), 6, 4);
      assert.deepEqual([data.toString(), size], ['line', 23]);
      const chunks: OutputChunk[] = [];
      const tail = new RunOutputTail(ssh, runDir, (c) => chunks.push(c));
      tail.follow();
      try {
        const text = () => chunks.filter((c) => c.stream === 'stdout').map((c) => c.text).join('');
        await until('the remote log', () => text() === 'first line\nsecond line\n', 30_000);
        appendFileSync(path.join(runDir, 'stdout.log'), 'third\n');
        await until('the appended line', () => text() === 'first line\nsecond line\nthird\n', 30_000);
      } finally {
        tail.stop();
      }
      assert.ok(!existsSync(path.join(dir, 'pwned')) && !existsSync('pwned'), 'nothing ran');
    });
  });
});
