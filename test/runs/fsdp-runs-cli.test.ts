// `fsdp-runs show` as a person runs it: a real process on a native-style run folder (metrics.jsonl),
// a TensorBoard log folder written by SummaryWriter (public fixture), a launched command's run folder
// whose scalars are in event files, and the same over a real sshd on 127.0.0.1 as host:path.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { LoopbackSshd } from '../harness/sshd';
import { parseArgs, syntheticLoss, writeSyntheticRun } from '../harness/synthetic-run';
import { fileVersionRecord, scalarRecord, tensorScalarRecord } from '../harness/tensorboard-file';

/** A C0 or C1 control character or a bidi override: none may reach the terminal. */
// eslint-disable-next-line no-control-regex -- these characters are what the test looks for
const CONTROL_CHARACTER = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;
const STRICT = path.join(
  repoRoot,
  'test',
  'fixtures',
  'tensorboard',
  'janosh-tensorboard-reducer',
  'tests',
  'runs',
  'strict',
  'run_1',
);

function run(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'cli', 'fsdp-runs.ts'), ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('fsdp-runs show (command line)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-runs-cli-'))));
  /** A launched command's run folder whose stdout.log is a fixture's real output (test/fixtures/printed/); `tensorboard`: the folder its run.json names. */
  const commandRun = (id: string, fixture: string, tensorboard?: string): string => {
    const runDir = path.join(dir, 'runs', id);
    mkdirSync(runDir, { recursive: true });
    const created = Date.now() / 1000 - 30;
    const manifest = {
      v: 1,
      run_id: id,
      created,
      updated: created + 20,
      status: 'completed',
      config: { command: ['python', 'train.py'] },
      world: { size: 1 },
      host: 'h',
      kind: 'command',
      ...(tensorboard ? { logs: { tensorboard: path.join(dir, tensorboard) } } : {}),
    };
    if (tensorboard) mkdirSync(path.join(dir, tensorboard), { recursive: true });
    writeFileSync(path.join(runDir, 'run.json'), JSON.stringify(manifest));
    copyFileSync(path.join(repoRoot, 'test', 'fixtures', 'printed', fixture), path.join(runDir, 'stdout.log'));
    writeFileSync(path.join(runDir, 'stderr.log'), '');
    return runDir;
  };
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a TensorBoard log folder: per tag count, first and last step, last value and wall time (--json: the documented shape)', () => {
    const r = run('show', STRICT, '--json');
    assert.equal(r.code, 0, r.err);
    const json = JSON.parse(r.out);
    assert.deepEqual(Object.keys(json), ['tags', 'nonfinite', 'problems']);
    assert.deepEqual(json.nonfinite, []);
    assert.deepEqual(json.tags['strict/foo'], {
      count: 100,
      first_step: 0,
      last_step: 495,
      last_value: Math.fround(1.212090253829956),
      last_wall_time: json.tags['strict/foo'].last_wall_time,
    });
    assert.ok(Math.abs(json.tags['strict/foo'].last_wall_time - 1622543341.77) < 0.01);
    assert.deepEqual(json.problems, []);
    const text = run('show', STRICT);
    assert.match(text.out, /^TensorBoard log folder: /);
    assert.match(text.out, /strict\/foo\s+100\s+0\s+495\s+1\.21209\s+2021-06-01 10:29:01/);
  });

  it('a run folder: the native metrics as tags, its end, and problems by file and offset', async () => {
    const runDir = path.join(dir, 'runs', 'native-like');
    await writeSyntheticRun(parseArgs(['--run-dir', runDir, '--steps', '40', '--rate', '0', '--every-ckpt', '100']));
    writeFileSync(path.join(runDir, 'metrics.jsonl'), '{"v":1,"type":"step","time":1}\n', { flag: 'a' });
    const json = JSON.parse(run('show', runDir, '--json').out);
    assert.deepEqual(Object.keys(json.tags), [
      'train/loss',
      'train/lr',
      'train/grad_norm',
      'train/tokens_per_s',
      'train/step_ms',
    ]);
    assert.equal(json.tags['train/loss'].count, 40);
    assert.equal(json.tags['train/loss'].last_value, syntheticLoss(40));
    assert.equal(json.problems.length, 1);
    assert.equal(json.problems[0].file, path.join(runDir, 'metrics.jsonl'));
    assert.match(json.problems[0].message, /step event: .*must have required property 'step'/);
    assert.match(run('show', runDir).out, /^run native-like \(completed\)/);
  });

  it("a run's status from its stream: a resume's owner took the folder (run.json names its attempt) — starting, not the last attempt's end; then running, then its own end (issue 41)", () => {
    const runDir = path.join(dir, 'runs', 'resuming');
    mkdirSync(runDir, { recursive: true });
    const metrics = path.join(runDir, 'metrics.jsonl');
    const now = Date.now() / 1000;
    const start = (attempt: string, time: number) => ({
      v: 1,
      type: 'run_start',
      time,
      run_id: 'resuming',
      config: {},
      world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu', pid: 4242 }] },
      attempt,
    });
    const append = (...events: object[]) =>
      writeFileSync(metrics, events.map((e) => `${JSON.stringify(e)}\n`).join(''), { flag: 'a' });
    append(start('a1', now - 60), { v: 1, type: 'run_end', time: now - 50, status: 'stopped', step: 4, attempt: 'a1' });
    // The resume's owner wrote run.json (its attempt begins where the stream ends now); its clock
    // is behind the last end's, which no reader may go by.
    const manifest = {
      v: 1,
      run_id: 'resuming',
      created: now - 70,
      updated: now - 55,
      status: 'starting',
      config: {},
      world: { size: 1 },
      host: 'h',
      pids: [4242],
      attempt: { id: 'a2', log_from: statSync(metrics).size },
    };
    writeFileSync(path.join(runDir, 'run.json'), JSON.stringify(manifest));
    const head = () => run('show', runDir).out.split('\n')[0];
    assert.match(head(), /^run resuming \(starting\)/);
    // Its start is in the stream; run.json, a poll behind, still says starting.
    append(start('a2', now - 40));
    assert.match(head(), /^run resuming \(running\)/);
    append({ v: 1, type: 'run_end', time: now - 30, status: 'completed', step: 8, attempt: 'a2' });
    assert.match(head(), /^run resuming \(completed\)/);
  });

  it("a launched command's run folder reads the TensorBoard folder its run.json names", () => {
    const runDir = path.join(dir, 'runs', 'cmd');
    const tb = path.join(dir, 'tb', 'Nov23_host');
    cpSync(path.join(dir, 'runs', 'native-like'), runDir, { recursive: true });
    rmSync(path.join(runDir, 'metrics.jsonl'));
    const manifest = {
      v: 1,
      run_id: 'cmd',
      created: Date.now() / 1000,
      status: 'running',
      config: {},
      world: { size: 1 },
      host: 'h',
      kind: 'command',
      logs: { tensorboard: path.join(dir, 'tb') },
    };
    writeFileSync(path.join(runDir, 'run.json'), JSON.stringify(manifest));
    spawnSync('mkdir', ['-p', tb]);
    writeFileSync(
      path.join(tb, 'events.out.tfevents.1.h.1.0'),
      Buffer.concat([
        fileVersionRecord(1),
        scalarRecord('train/loss', 1, 2.5, 2),
        tensorScalarRecord('eval/acc', 1, 0.5, 3, true),
        scalarRecord('train/loss', 2, 2.25, 4),
      ]),
    );
    const json = JSON.parse(run('show', runDir, '--json').out);
    assert.deepEqual(json.tags, {
      'train/loss': { count: 2, first_step: 1, last_step: 2, last_value: 2.25, last_wall_time: 4 },
      'eval/acc': { count: 1, first_step: 1, last_step: 1, last_value: 0.5, last_wall_time: 3 },
    });
  });

  it("a command that only prints: its printed step lines, as the dashboard charts them (nanoGPT's real output)", () => {
    const runDir = commandRun('nanogpt', 'nanogpt.stdout.log');
    const json = JSON.parse(run('show', runDir, '--json').out);
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(json.tags).map(([t, s]) => [
          t,
          [
            (s as { count: number }).count,
            (s as { last_step: number }).last_step,
            (s as { last_value: number }).last_value,
          ],
        ]),
      ),
      {
        'printed/eval_train_loss': [2, 30, 2.5921],
        'printed/val_loss': [2, 30, 2.6043],
        'printed/loss': [5, 40, 2.5107],
        'printed/time_ms': [5, 40, 143.88],
        'printed/mfu': [4, 40, 2.37 / 100],
      },
    );
    assert.deepEqual(json.nonfinite, []);
    assert.deepEqual(json.problems, []);
    const text = run('show', runDir).out;
    assert.match(text, /^3 files read$/m, 'metrics.jsonl, stdout.log and stderr.log');
    assert.match(text, /^printed\/loss\s+5\s+0\s+40\s+2\.5107\s/m);
  });

  it('--json nonfinite: each NaN series at its first step, from printed lines and from TensorBoard', () => {
    const printed = commandRun('nanogpt-nan', 'build-nanogpt-nan.stdout.log');
    const fromPrinted = JSON.parse(run('show', printed, '--json').out);
    assert.deepEqual(fromPrinted.nonfinite, [
      { tag: 'printed/loss', step: 2, rank: null },
      { tag: 'printed/norm', step: 2, rank: null },
    ]);
    assert.equal(fromPrinted.tags['printed/loss'].last_value, null);
    assert.equal(fromPrinted.tags['printed/lr'].last_value, 0.06, "build-nanogpt's lr (no colon) is read");
    assert.match(
      run('show', printed).out,
      /NaN or Inf \(first step of each\):\n {2}printed\/loss from step 2\n {2}printed\/norm from step 2/,
    );
    const hf = commandRun('hf-nan', 'hf-trainer-nan.stdout.log');
    assert.deepEqual(JSON.parse(run('show', hf, '--json').out).nonfinite, [
      { tag: 'printed/grad_norm', step: 2, rank: null },
    ]);
    // The Trainer's TensorBoard files (a run naming its folder: its printed lines are not read).
    const tbRun = commandRun('hf-tb-nan', 'hf-trainer-nan.stdout.log', 'tb-nan');
    writeFileSync(
      path.join(dir, 'tb-nan', 'events.out.tfevents.1.h.1.0'),
      Buffer.concat([
        fileVersionRecord(1),
        scalarRecord('train/loss', 1, 3.9, 2),
        scalarRecord('train/grad_norm', 1, 1.4, 2),
        scalarRecord('train/loss', 2, 0, 3),
        scalarRecord('train/grad_norm', 2, Number.NaN, 3),
        scalarRecord('train/grad_norm', 3, Number.POSITIVE_INFINITY, 4),
      ]),
    );
    const fromTb = JSON.parse(run('show', tbRun, '--json').out);
    assert.deepEqual(fromTb.nonfinite, [{ tag: 'train/grad_norm', step: 2, rank: null }]);
    assert.deepEqual(Object.keys(fromTb.tags), ['train/loss', 'train/grad_norm']);
  });

  it('writes tag names as data: control characters escaped in text and JSON, a tag named __proto__ kept (issue 26, item 5)', () => {
    const title = '\u001b]0;pwned\u0007'; // what retitled the terminal
    const csi = 'x\u009b2J\u202e'; // a C1 control sequence introducer and a bidi override
    const tb = path.join(dir, 'hostile-tb');
    spawnSync('mkdir', ['-p', tb]);
    writeFileSync(
      path.join(tb, 'events.out.tfevents.1.h.1.0'),
      Buffer.concat([
        fileVersionRecord(1),
        scalarRecord(title, 1, 2.5, 2),
        scalarRecord('__proto__', 1, 7, 2),
        scalarRecord(csi, 1, 3, 2),
      ]),
    );
    const runDir = path.join(dir, 'runs', 'hostile-run');
    spawnSync('mkdir', ['-p', runDir]);
    // Written out: an object literal's __proto__ would set its prototype, not make a key.
    writeFileSync(
      path.join(runDir, 'metrics.jsonl'),
      `{"v":1,"type":"scalars","step":3,"time":5,"values":{"__proto__":1.5,${JSON.stringify(title)}:2}}\n`,
    );
    for (const where of [tb, runDir]) {
      const text = run('show', where);
      assert.equal(text.code, 0, text.err);
      assert.doesNotMatch(text.out, CONTROL_CHARACTER, 'no control character reaches the terminal');
      assert.match(text.out, /\\x1b]0;pwned\\x07 /);
      assert.match(text.out, /^__proto__ /m);
      const raw = run('show', where, '--json').out;
      // eslint-disable-next-line no-control-regex -- nor written in the JSON
      assert.doesNotMatch(raw, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
      const json = JSON.parse(raw) as { tags: Record<string, { last_value: number }> };
      assert.ok(Object.hasOwn(json.tags, '__proto__'), Object.keys(json.tags).join(', '));
      assert.equal(json.tags['__proto__'].last_value, where === tb ? 7 : 1.5);
      assert.ok(Object.hasOwn(json.tags, title));
      if (where === tb) assert.equal(json.tags[csi].last_value, 3);
    }
  });

  it('reports a last record cut short, in metrics.jsonl and in an event file (issue 26, item 5)', () => {
    const tb = path.join(dir, 'cut-tb');
    spawnSync('mkdir', ['-p', tb]);
    const last = scalarRecord('train/loss', 2, 2.25, 4);
    writeFileSync(
      path.join(tb, 'events.out.tfevents.1.h.1.0'),
      Buffer.concat([fileVersionRecord(1), scalarRecord('train/loss', 1, 2.5, 2), last.subarray(0, last.length - 5)]),
    );
    const fromTb = JSON.parse(run('show', tb, '--json').out) as {
      tags: Record<string, { count: number }>;
      problems: Array<{ file: string; message: string }>;
    };
    assert.equal(fromTb.tags['train/loss'].count, 1);
    assert.deepEqual(
      fromTb.problems.map((p) => [path.basename(p.file), p.message]),
      [
        [
          'events.out.tfevents.1.h.1.0',
          `the last record is incomplete: ${last.length - 5} bytes after the last complete one (the writer is still writing it, or the file was cut short)`,
        ],
      ],
    );
    const runDir = path.join(dir, 'runs', 'cut-run');
    spawnSync('mkdir', ['-p', runDir]);
    writeFileSync(
      path.join(runDir, 'metrics.jsonl'),
      `${JSON.stringify({ v: 1, type: 'scalars', step: 1, time: 5, values: { a: 1 } })}\n{"v":1,"type":"scal`,
    );
    const text = run('show', runDir);
    assert.match(
      text.out,
      /1 problem:\n {2}.*metrics\.jsonl:\d+: the last record is incomplete: 19 bytes after the last complete one/,
    );
  });

  it('says what is wrong: nothing there, bad arguments, a hostile host', () => {
    const none = run('show', dir);
    assert.equal(none.code, 1);
    assert.match(none.err, /no run here \(no run\.json, metrics\.jsonl or TensorBoard event files/);
    assert.equal(run('list').code, 2);
    assert.equal(run('show').code, 2);
    const hostile = run('show', 'x;touch pwned:/tmp');
    assert.equal(hostile.code, 2);
    assert.match(hostile.err, /has characters a host alias cannot have/);
  });

  it('host:path over ssh reads the same as here', async () => {
    const sshd = await LoopbackSshd.start();
    try {
      const remote = run('show', `${sshd.alias}:${STRICT}`, '--json', '--ssh-config', sshd.clientConfig);
      assert.equal(remote.code, 0, remote.err);
      assert.deepEqual(JSON.parse(remote.out), JSON.parse(run('show', STRICT, '--json').out));
      const runDir = path.join(dir, 'runs', 'native-like');
      assert.deepEqual(
        JSON.parse(run('show', `${sshd.alias}:${runDir}`, '--json', '--ssh-config', sshd.clientConfig).out),
        JSON.parse(run('show', runDir, '--json').out),
      );
    } finally {
      await sshd.stop();
    }
  });
});
