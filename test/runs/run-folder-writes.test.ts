// Issue 40, item 2, in TypeScript: every file the product writes in a run folder is opened without
// following a link and only when it is a regular file (core/protocol/regular-file.ts,
// openRegularFileForWriting). Before, a resume with stdout.log or stderr.log replaced by a symbolic
// link appended the run's output to the file behind it, run.lock as a link was refused with a raw
// ELOOP, and `fsdp-runs show` quoted the first bytes of the file a linked run.json named.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { openRegularFileForWriting, RefusedFile, writeRegularFileSync } from '../../core/protocol/regular-file';
import { parseRunManifest } from '../../core/protocol/run-manifest';
import { runFolderInUse } from '../../runs/folder/run-folder-lock';
import { LocalMachine } from '../../runs/machines/local-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { LoopbackSshd } from '../harness/sshd';
import { until } from '../harness/until';
import { startingManifest } from '../harness/run-owner-argv';

const NATIVE = path.join(repoRoot, 'native', 'build', 'Release', 'fsdp-train-native');
const SECRET = "s3cr3t: a line of the person's own file, outside the run folder\n";
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;

function mkfifo(file: string): void {
  const r = spawnSync('mkfifo', [file]);
  assert.equal(r.status, 0, r.stderr?.toString());
}

/** The message `work` throws (a RefusedFile), or a failure when it throws nothing or something else. */
function refusal(work: () => unknown): string {
  try {
    work();
  } catch (e) {
    assert.ok(e instanceof RefusedFile, `not a RefusedFile: ${String(e)}`);
    return e.message;
  }
  assert.fail('nothing was refused');
}

describe('writes to a run folder never follow a link and only reach regular files (issue 40, item 2)', function () {
  this.timeout(60_000);
  let tmp: string;
  let outside: string;
  let runDir: string;

  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-writes-'));
    outside = path.join(tmp, 'outside.txt');
    writeFileSync(outside, SECRET);
    runDir = path.join(tmp, 'run');
    mkdirSync(runDir);
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  it('refuses a link, a FIFO (read or not), a device and a folder, each by name and kind', () => {
    const link = path.join(runDir, 'stdout.log');
    symlinkSync(outside, link);
    assert.equal(
      refusal(() => openRegularFileForWriting(link, APPEND)),
      `${link} is a symbolic link, not a regular file: not written`,
    );
    const fifo = path.join(runDir, 'stderr.log');
    mkfifo(fifo);
    const fifoRefusal = `${fifo} is a FIFO (named pipe), not a regular file: not written`;
    assert.equal(
      refusal(() => openRegularFileForWriting(fifo, APPEND)),
      fifoRefusal,
    );
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      assert.equal(
        refusal(() => openRegularFileForWriting(fifo, APPEND)),
        fifoRefusal,
        'with a reader the open succeeds: what it opened is refused',
      );
    } finally {
      closeSync(reader);
    }
    assert.match(
      refusal(() => openRegularFileForWriting('/dev/null', APPEND)),
      /^\/dev\/null is a character device/,
    );
    const folder = path.join(runDir, 'run.lock');
    mkdirSync(folder);
    assert.equal(
      refusal(() => openRegularFileForWriting(folder, constants.O_RDWR | constants.O_CREAT)),
      `${folder} is a folder, not a regular file: not written`,
    );
    assert.equal(readFileSync(outside, 'utf8'), SECRET);
    // A regular file, and a missing one, are opened as asked.
    const fd = openRegularFileForWriting(path.join(runDir, 'metrics.jsonl'), APPEND);
    closeSync(fd);
  });

  it('an export saved into the run folder replaces a regular file and refuses a link put in its place', () => {
    const png = path.join(runDir, 'loss.png');
    writeRegularFileSync(png, Buffer.from('first'));
    writeRegularFileSync(png, Buffer.from('2nd'));
    assert.equal(readFileSync(png, 'utf8'), '2nd');
    const csv = path.join(runDir, 'metrics.csv');
    symlinkSync(outside, csv);
    assert.equal(
      refusal(() => writeRegularFileSync(csv, Buffer.from('step,loss\n'))),
      `${csv} is a symbolic link, not a regular file: not written`,
    );
    assert.equal(readFileSync(outside, 'utf8'), SECRET);
  });

  for (const name of ['stdout.log', 'stderr.log']) {
    it(`a launch with ${name} linked out of the run folder is refused and writes nothing there`, async () => {
      symlinkSync(outside, path.join(runDir, name));
      const marker = path.join(tmp, 'started');
      await assert.rejects(
        new LocalMachine().start({
          runDir,
          cwd: tmp,
          argv: ['/usr/bin/touch', marker],
          manifest: startingManifest('writes'),
        }),
        (e: Error) =>
          e instanceof RefusedFile &&
          e.message === `${path.join(runDir, name)} is a symbolic link, not a regular file: not written`,
      );
      assert.equal(readFileSync(outside, 'utf8'), SECRET);
      assert.throws(() => readFileSync(marker), /ENOENT/, 'nothing was started');
    });
  }

  it('run.lock as a link is refused in words, not with ELOOP', () => {
    const lock = path.join(runDir, 'run.lock');
    symlinkSync(outside, lock);
    assert.equal(
      refusal(() => runFolderInUse(NATIVE, runDir)),
      `${lock} is a symbolic link, not a regular file: not written`,
    );
    assert.equal(readFileSync(outside, 'utf8'), SECRET);
  });

  it("run.json linked to a person's file: fsdp-runs show says it is not JSON without quoting it", () => {
    symlinkSync(outside, path.join(runDir, 'run.json'));
    writeFileSync(path.join(runDir, 'metrics.jsonl'), '');
    const parsed = parseRunManifest(SECRET);
    assert.ok('error' in parsed);
    assert.ok(!parsed.error.includes('s3cr3t'), parsed.error);
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'cli', 'fsdp-runs.ts'), 'show', runDir],
      {
        cwd: repoRoot,
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    const said = `${r.stdout}${r.stderr}`;
    assert.match(said, /run\.json is not valid JSON/);
    assert.ok(!said.includes('s3cr3t'), `the file's bytes were shown:\n${said}`);
  });
  describe('over ssh', () => {
    let sshd: LoopbackSshd;
    before(async () => {
      sshd = await LoopbackSshd.start();
    });
    after(async () => {
      await sshd?.stop();
    });

    it('a launch replaces stdout.log and stderr.log linked out of the run folder instead of writing through them', async () => {
      const outsideErr = path.join(tmp, 'outside-err.txt');
      writeFileSync(outsideErr, SECRET);
      symlinkSync(outside, path.join(runDir, 'stdout.log'));
      symlinkSync(outsideErr, path.join(runDir, 'stderr.log'));
      const ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
      await ssh.start({
        runDir,
        cwd: tmp,
        argv: ['/bin/echo', 'launched'],
        manifest: startingManifest('writes-ssh'),
      });
      const stdout = path.join(runDir, 'stdout.log');
      await until(
        'the launch writes its stdout.log',
        () => {
          try {
            return readFileSync(stdout, 'utf8').includes('launched');
          } catch {
            return false;
          }
        },
        60_000,
      );
      assert.ok(!lstatSync(stdout).isSymbolicLink() && !lstatSync(path.join(runDir, 'stderr.log')).isSymbolicLink());
      assert.equal(readFileSync(outside, 'utf8'), SECRET, 'stdout went through the link');
      assert.equal(readFileSync(outsideErr, 'utf8'), SECRET, 'stderr went through the link');
    });
  });
});
