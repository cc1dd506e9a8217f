// Watching TensorBoard log folders for real: event files that appear and grow while a writer runs
// (a separate process, at a steady pace), followed on this machine by file watching and over a real
// sshd on 127.0.0.1 by the same reconnecting tail as metrics.jsonl — every step arrives once, the
// usual tags fill the loss chart's series, a resumed writer's new file replaces the steps it repeats.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { LoopbackSshd } from '../harness/sshd';
import { syntheticLoss } from '../harness/synthetic-run';
import { eventFileName, fileVersionRecord, scalarRecord } from '../harness/tensorboard-file';
import { until } from '../harness/until';

const WRITER = path.join(repoRoot, 'test', 'harness', 'tensorboard-file.ts');

function startWriter(dir: string, steps: number, rate: number): ChildProcess {
  return spawn(
    process.execPath,
    ['--import', 'tsx', WRITER, '--dir', dir, '--steps', String(steps), '--rate', String(rate)],
    { stdio: 'ignore' },
  );
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
}

function assertLossSteps(w: RunWatch, n: number): void {
  assert.deepEqual(
    [...w.history.step.loss.steps],
    Array.from({ length: n }, (_, i) => i + 1),
  );
  w.history.step.loss.values.forEach((v, i) =>
    assert.equal(v, Math.fround(syntheticLoss(i + 1)), `loss of step ${i + 1}`),
  );
}

describe('watching TensorBoard log folders (real writer process, real sshd on 127.0.0.1)', function () {
  this.timeout(120_000);
  let tmp: string;
  const watches: RunWatch[] = [];
  const children: ChildProcess[] = [];
  const watch = (machine: RunMachine, dir: string) => {
    const w = new RunWatch({ target: machine.target, runDir: dir, format: 'tensorboard' }, machine);
    watches.push(w);
    return w;
  };
  beforeEach(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-tbwatch-'))));
  afterEach(() => {
    for (const w of watches.splice(0)) w.dispose();
    for (const c of children.splice(0)) c.kill('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  });

  it('on this machine: a folder watched before its file exists gets every step once, as it is written', async () => {
    const dir = path.join(tmp, 'runs', 'Nov23_host');
    const w = watch(new LocalMachine(), dir);
    await w.start();
    const writer = startWriter(dir, 150, 100);
    children.push(writer);
    await until('a few steps while writing', () => (w.history.lastStep ?? 0) >= 20 && writer.exitCode === null, 60_000);
    await exited(writer);
    await until('step 150', () => w.history.lastStep === 150, 30_000);
    assertLossSteps(w, 150);
    assert.deepEqual([...w.history.step.lr.values].slice(0, 2), [Math.fround(1e-3), Math.fround(1e-3)]);
    assert.deepEqual(w.problems, []);
    assert.equal(w.logFiles.length, 1);
  });

  it("a resumed writer's later file replaces the steps it repeats; a corrupted record is reported", async () => {
    const dir = path.join(tmp, 'lightning_logs', 'version_0');
    mkdirSync(dir, { recursive: true });
    const first = path.join(dir, eventFileName(1000, 0));
    const second = path.join(dir, eventFileName(2000, 1));
    writeFileSync(
      first,
      Buffer.concat([
        fileVersionRecord(1000),
        ...Array.from({ length: 30 }, (_, i) => scalarRecord('loss', i + 1, 1, 1000 + i)),
      ]),
    );
    // The second run resumed from step 20's checkpoint: steps 21.. again, with other values.
    const records = [
      fileVersionRecord(2000),
      ...Array.from({ length: 20 }, (_, i) => scalarRecord('loss', 21 + i, 2, 2000 + i)),
    ];
    const bad = Buffer.from(records[5]);
    bad[bad.length - 6] ^= 0xff; // step 25's data
    records[5] = bad;
    writeFileSync(second, Buffer.concat(records));
    const w = watch(new LocalMachine(), dir);
    await w.start();
    await until('step 40', () => w.history.lastStep === 40, 30_000);
    const steps = [...w.history.step.loss.steps];
    assert.deepEqual(steps, [
      ...Array.from({ length: 20 }, (_, i) => i + 1),
      21,
      22,
      23,
      24,
      ...Array.from({ length: 15 }, (_, i) => 26 + i),
    ]);
    assert.ok(
      [...w.history.step.loss.values].slice(20).every((v) => v === 2),
      "the later file's values",
    );
    assert.equal(w.problems.length, 1);
    assert.match(w.problems[0].message, /data CRC mismatch/);
    // It keeps following the newest file.
    appendFileSync(second, scalarRecord('loss', 41, 3, 2100));
    await until('step 41', () => w.history.lastStep === 41, 10_000);
  });

  describe('over ssh', () => {
    let sshd: LoopbackSshd;
    let ssh: SshMachine;
    before(async () => {
      sshd = await LoopbackSshd.start();
      ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
    });
    after(async () => {
      await sshd?.stop();
    });

    it('follows a growing event file through cut connections, every step exactly once', async () => {
      const dir = path.join(tmp, `tb logs; $(touch pwned)`, 'run');
      const writer = startWriter(dir, 300, 60);
      children.push(writer);
      const w = watch(ssh, dir);
      await w.start();
      let cuts = 0;
      for (const at of [40, 120, 200]) {
        await until(
          `step ${at}, connected`,
          () => (w.history.lastStep ?? 0) >= at && w.connection.state === 'live',
          60_000,
        );
        if (sshd.killConnections() > 0) cuts++;
        // The cut is seen before the next one is made.
        await until('the cut to be noticed', () => w.connection.state !== 'live', 30_000);
      }
      await exited(writer);
      await until('step 300', () => w.history.lastStep === 300, 90_000);
      assert.equal(cuts, 3);
      assertLossSteps(w, 300);
      assert.deepEqual(w.problems, []);
      assert.equal(w.logFiles.length, 1);
      const listed = await ssh.listFiles(path.dirname(dir), 'events.out.tfevents.', 1);
      assert.equal(listed.length, 1);
      assert.equal(listed[0].path, w.logFiles[0]);
      assert.ok(
        !existsSync(path.join(tmp, 'pwned')) &&
          !existsSync(path.join(repoRoot, 'pwned')) &&
          !existsSync(path.join(os.homedir(), 'pwned')),
        'nothing in the path was executed',
      );
    });
  });
});
