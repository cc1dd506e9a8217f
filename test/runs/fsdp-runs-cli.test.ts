// `fsdp-runs show` as a person runs it: a real process on a native-style run folder (metrics.jsonl),
// a TensorBoard log folder written by SummaryWriter (public fixture), a launched command's run folder
// whose scalars are in event files, and the same over a real sshd on 127.0.0.1 as host:path.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { LoopbackSshd } from '../harness/sshd';
import { parseArgs, syntheticLoss, writeSyntheticRun } from '../harness/synthetic-run';
import { fileVersionRecord, scalarRecord, tensorScalarRecord } from '../harness/tensorboard-file';

const STRICT = path.join(repoRoot, 'test', 'fixtures', 'tensorboard', 'janosh-tensorboard-reducer', 'tests', 'runs', 'strict', 'run_1');

function run(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'cli', 'fsdp-runs.ts'), ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('fsdp-runs show (command line)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-runs-cli-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a TensorBoard log folder: per tag count, first and last step, last value and wall time (--json: the documented shape)', () => {
    const r = run('show', STRICT, '--json');
    assert.equal(r.code, 0, r.err);
    const json = JSON.parse(r.out);
    assert.deepEqual(Object.keys(json), ['tags', 'problems']);
    assert.deepEqual(json.tags['strict/foo'], { count: 100, first_step: 0, last_step: 495, last_value: Math.fround(1.212090253829956), last_wall_time: json.tags['strict/foo'].last_wall_time });
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
    assert.deepEqual(Object.keys(json.tags), ['train/loss', 'train/lr', 'train/grad_norm', 'train/tokens_per_s', 'train/step_ms']);
    assert.equal(json.tags['train/loss'].count, 40);
    assert.equal(json.tags['train/loss'].last_value, syntheticLoss(40));
    assert.equal(json.problems.length, 1);
    assert.equal(json.problems[0].file, path.join(runDir, 'metrics.jsonl'));
    assert.match(json.problems[0].message, /step event: .*must have required property 'step'/);
    assert.match(run('show', runDir).out, /^run native-like \(completed\)/);
  });

  it('a launched command\'s run folder reads the TensorBoard folder its run.json names', () => {
    const runDir = path.join(dir, 'runs', 'cmd');
    const tb = path.join(dir, 'tb', 'Nov23_host');
    cpSync(path.join(dir, 'runs', 'native-like'), runDir, { recursive: true });
    rmSync(path.join(runDir, 'metrics.jsonl'));
    const manifest = { v: 1, run_id: 'cmd', created: Date.now() / 1000, status: 'running', config: {}, world: { size: 1 }, host: 'h', kind: 'command', logs: { tensorboard: path.join(dir, 'tb') } };
    writeFileSync(path.join(runDir, 'run.json'), JSON.stringify(manifest));
    spawnSync('mkdir', ['-p', tb]);
    writeFileSync(path.join(tb, 'events.out.tfevents.1.h.1.0'), Buffer.concat([fileVersionRecord(1), scalarRecord('train/loss', 1, 2.5, 2), tensorScalarRecord('eval/acc', 1, 0.5, 3, true), scalarRecord('train/loss', 2, 2.25, 4)]));
    const json = JSON.parse(run('show', runDir, '--json').out);
    assert.deepEqual(json.tags, {
      'train/loss': { count: 2, first_step: 1, last_step: 2, last_value: 2.25, last_wall_time: 4 },
      'eval/acc': { count: 1, first_step: 1, last_step: 1, last_value: 0.5, last_wall_time: 3 },
    });
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
      assert.deepEqual(JSON.parse(run('show', `${sshd.alias}:${runDir}`, '--json', '--ssh-config', sshd.clientConfig).out), JSON.parse(run('show', runDir, '--json').out));
    } finally {
      await sshd.stop();
    }
  });
});
