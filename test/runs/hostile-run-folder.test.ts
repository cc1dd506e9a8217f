// Files that are not files (issue 25): a FIFO named run.json or metrics.jsonl, and links from them
// to /dev/zero or /dev/urandom. Before, `fsdp-runs show` hung for ever on the FIFO, the watch's
// start() never returned (a libuv thread stuck in open), and a link to /dev/urandom grew the
// reader to gigabytes. Every reader now refuses them and says what it refused: the watch, the
// CLI, the native trainer and the Python supervisor, here and over ssh. Each check runs under a
// deadline, so a reader that blocks fails the test instead of hanging it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { RunLogReader } from '../../core/protocol/run-log-reader';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { LoopbackSshd } from '../harness/sshd';
import { parseArgs, writeSyntheticRun } from '../harness/synthetic-run';
import { until } from '../harness/until';

/** Fails (instead of hanging the suite) when `work` does not settle within the deadline. */
async function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms / 1000} s: it blocked`)), ms)),
  );
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const NATIVE = path.join(repoRoot, 'native', 'build', 'Release', 'fsdp-train-native');

function mkfifo(file: string): void {
  const r = spawnSync('mkfifo', [file]);
  assert.equal(r.status, 0, r.stderr?.toString());
}

function fsdpRuns(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'cli', 'fsdp-runs.ts'), ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('run folders holding files that are not files (real FIFOs and devices)', function () {
  this.timeout(180_000);
  let tmp: string;
  const local = new LocalMachine();
  const watches: RunWatch[] = [];

  /** A finished run folder (run.json, metrics.jsonl) to spoil one file of. */
  async function runFolder(name: string): Promise<string> {
    const runDir = path.join(tmp, name);
    await writeSyntheticRun(parseArgs(['--run-dir', runDir, '--steps', '5', '--rate', '0', '--every-ckpt', '100']));
    return runDir;
  }

  function replaceWith(file: string, kind: 'fifo' | '/dev/zero' | '/dev/urandom'): void {
    rmSync(file, { force: true });
    if (kind === 'fifo') mkfifo(file);
    else symlinkSync(kind, file);
  }

  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-hostile-'));
  });
  afterEach(() => {
    for (const w of watches.splice(0)) w.dispose();
    rmSync(tmp, { recursive: true, force: true });
  });

  for (const kind of ['fifo', '/dev/zero'] as const) {
    it(`run.json as ${kind === 'fifo' ? 'a FIFO' : `a link to ${kind}`}: refused by name, the watch starts and says why, fsdp-runs show ends`, async () => {
      const runDir = await runFolder('manifest');
      replaceWith(path.join(runDir, 'run.json'), kind);
      await assert.rejects(
        within('readManifest', 10_000, local.readManifest(runDir)),
        /run\.json is a (FIFO|character device).*not read/,
      );
      const w = new RunWatch({ target: 'local', runDir }, local);
      watches.push(w);
      await within("the watch's start()", 10_000, w.start());
      assert.match(w.manifestError ?? '', /run\.json is a (FIFO|character device)/);
      await until('the metrics are read all the same', () => w.history.lastStep === 5, 20_000);
      const r = fsdpRuns('show', runDir, '--json');
      assert.equal(r.error, undefined, `fsdp-runs show: ${r.error?.message}`);
      const json = JSON.parse(r.stdout);
      assert.equal(json.tags['train/loss'].count, 5);
      assert.ok(
        json.problems.some(
          (p: { file: string; message: string }) => p.file.endsWith('run.json') && /not a regular file/.test(p.message),
        ),
        JSON.stringify(json.problems),
      );
    });
  }

  for (const kind of ['fifo', '/dev/urandom'] as const) {
    it(`metrics.jsonl as ${kind === 'fifo' ? 'a FIFO' : `a link to ${kind}`}: the reader refuses it at once and reads nothing`, async () => {
      const runDir = await runFolder('metrics');
      const metrics = path.join(runDir, 'metrics.jsonl');
      replaceWith(metrics, kind);
      await assert.rejects(
        within('RunLogReader.read', 10_000, new RunLogReader(metrics).read()),
        /metrics\.jsonl is a (FIFO|character device).*not read/,
      );
      const w = new RunWatch({ target: 'local', runDir }, local);
      watches.push(w);
      await within("the watch's start()", 10_000, w.start());
      await until(
        'the watch reports the refusal',
        () => w.problems.some((p) => /not a regular file/.test(p.message)),
        20_000,
      );
      assert.equal(w.history.lastStep, undefined);
      const r = fsdpRuns('show', runDir, '--json');
      assert.equal(r.error, undefined, `fsdp-runs show: ${r.error?.message}`);
      assert.match(r.stdout + r.stderr, /not a regular file/);
    });
  }

  it('fsdp-train and the native trainer do not block on a FIFO named run.json: they replace it and run', async () => {
    const exitOf = (argv: string[]) => {
      const child = spawn(argv[0], argv.slice(1), {
        cwd: repoRoot,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, FSDP_TRAIN_NATIVE: NATIVE },
      });
      let err = '';
      child.stderr.on('data', (b) => (err += b));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      return within(argv.slice(0, 4).join(' '), 120_000, exited)
        .then((code) => ({ code, err }))
        .finally(() => child.kill('SIGKILL'));
    };
    const viaCli = path.join(tmp, 'via-cli');
    mkdirSync(viaCli);
    mkfifo(path.join(viaCli, 'run.json'));
    const cli = await exitOf([
      process.execPath,
      '--import',
      'tsx',
      path.join(repoRoot, 'cli', 'fsdp-train.ts'),
      path.join(repoRoot, 'samples', 'tiny-cpu.yaml'),
      '--run-dir',
      viaCli,
      '--set',
      'training.max_steps=2',
    ]);
    assert.equal(cli.code, 0, cli.err);
    assert.equal(JSON.parse(readFileSync(path.join(viaCli, 'run.json'), 'utf8')).status, 'completed');
    // The runtime started directly on a folder (by mpirun or srun, as people do) reads the run's id
    // from run.json without blocking, and leaves it alone: run.json is its supervisor's to write.
    const direct = path.join(tmp, 'direct');
    mkdirSync(direct);
    mkfifo(path.join(direct, 'run.json'));
    const native = await exitOf([NATIVE, '--config', path.join(viaCli, 'config.json'), '--run-dir', direct]);
    assert.equal(native.code, 0, native.err);
    assert.ok(lstatSync(path.join(direct, 'run.json')).isFIFO(), 'the runtime does not write run.json');
    const start = readFileSync(path.join(direct, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; run_id?: string })
      .find((e) => e.type === 'run_start');
    assert.equal(start?.run_id, 'direct', "the folder's name is the run's id");
  });

  it('the native trainer refuses a metrics.jsonl that is a link, a FIFO or a device by name, at once, writing nothing through it (issue 40, items 2 and 3)', async () => {
    // The config a run of the CLI resolves, for the runtime started directly (as mpirun or srun would).
    const first = path.join(tmp, 'first');
    const made = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(repoRoot, 'cli', 'fsdp-train.ts'),
        path.join(repoRoot, 'samples', 'tiny-cpu.yaml'),
        '--run-dir',
        first,
        '--set',
        'training.max_steps=1',
      ],
      { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, FSDP_TRAIN_NATIVE: NATIVE }, timeout: 120_000 },
    );
    assert.equal(made.status, 0, made.stderr);
    const outside = path.join(tmp, 'outside.txt');
    const theirs = "a file of the person's own, outside the run folder\n";
    writeFileSync(outside, theirs);
    for (const kind of [outside, 'fifo', '/dev/zero', '/dev/urandom'] as const) {
      const runDir = path.join(tmp, `resumed-${path.basename(kind)}`);
      mkdirSync(runDir);
      const log = path.join(runDir, 'metrics.jsonl');
      if (kind === 'fifo') mkfifo(log);
      else symlinkSync(kind, log);
      const child = spawn(
        NATIVE,
        ['--config', path.join(first, 'config.json'), '--run-dir', runDir, '--resume', 'auto'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let err = '';
      child.stderr.on('data', (b) => (err += b));
      // Before: appended to the file behind the link; hung on the FIFO deaf to SIGTERM; read 1 GB of
      // /dev/zero and trained from step 0; spun on /dev/urandom.
      const code = await within(
        `fsdp-train-native with metrics.jsonl as ${kind}`,
        120_000,
        new Promise<number | null>((resolve) => child.once('exit', resolve)),
      ).finally(() => child.kill('SIGKILL'));
      assert.notEqual(code, 0, err);
      const what = kind === 'fifo' ? 'a FIFO' : 'a symbolic link';
      assert.ok(err.includes(`${log}: is ${what}, not a regular file: not written`), err);
      assert.equal(readFileSync(outside, 'utf8'), theirs, 'the runtime wrote through the link');
    }
  });

  it('the Python supervisor does not block on a FIFO named run.json', async () => {
    const runDir = path.join(tmp, 'supervised');
    mkdirSync(runDir);
    mkfifo(path.join(runDir, 'run.json'));
    const child = spawn(
      'python3',
      [path.join(repoRoot, 'python', 'fsdp_studio', 'supervise.py'), '--run-dir', runDir, '--', 'true'],
      { stdio: 'ignore' },
    );
    const code = await within(
      'supervise.py with a FIFO run.json',
      30_000,
      new Promise<number | null>((resolve) => child.once('exit', resolve)),
    ).finally(() => child.kill('SIGKILL'));
    assert.equal(code, 0);
    assert.match(readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8'), /"run_end"/);
  });

  describe('over ssh', () => {
    let sshd: LoopbackSshd;
    let ssh: RunMachine;
    before(async () => {
      sshd = await LoopbackSshd.start();
      ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
    });
    after(async () => {
      await sshd?.stop();
    });

    it('a FIFO run.json and a metrics.jsonl linked to /dev/urandom on the host are refused, not streamed', async () => {
      const runDir = await runFolder('remote');
      replaceWith(path.join(runDir, 'run.json'), 'fifo');
      await assert.rejects(
        within('readManifest over ssh', 30_000, ssh.readManifest(runDir)),
        /run\.json is not a regular file/,
      );
      replaceWith(path.join(runDir, 'metrics.jsonl'), '/dev/urandom');
      await assert.rejects(
        within('readFile over ssh', 30_000, ssh.readFile(path.join(runDir, 'metrics.jsonl'), 1 << 20)),
        /not a regular file/,
      );
      const w = new RunWatch({ target: ssh.target, runDir }, ssh);
      watches.push(w);
      await within("the watch's start() over ssh", 30_000, w.start());
      await until(
        'the tail reports the refusal',
        () =>
          w.connection.state === 'reconnecting' &&
          /not a regular file/.test((w.connection as { reason?: string }).reason ?? ''),
        30_000,
      );
      assert.equal(w.history.lastStep, undefined);
    });
  });
});
