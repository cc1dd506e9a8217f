// The Python companion and its supervisor with Debian's real PyTorch (CPU, gloo): its own unit tests;
// a 2-rank DDP script started with the environment rendezvous, whose every event the metrics
// protocol's schema accepts, whose planted NaN is named by module and rank; one rank failing
// stops the other; and `pip install` from the repository. (Stop and relaunch: command-launch.test.ts.)
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrowingFileReader } from '../../runs/watch/transports/growing-file';
import { metricsDecoder } from '../../runs/watch/decoders/metrics-decoder';
import { RunHistory } from '../../core/runs/run-history';
import { repoRoot } from '../../scripts/code-server';
import { DDP_SCRIPT, SUPERVISOR, TORCH_PYTHON } from '../harness/pytorch';


function runDirWithManifest(parent: string, name: string): string {
  const dir = path.join(parent, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ v: 1, run_id: name, created: Date.now() / 1000, status: 'starting', config: { command: 'ddp_train.py' }, world: { size: 2 }, host: os.hostname(), kind: 'command' }));
  return dir;
}

/** Runs the supervisor in a session of its own (as the editor does), output in the run folder. */
function supervise(runDir: string, nproc: number, args: string[]) {
  const out = path.join(runDir, 'stdout.log');
  const err = path.join(runDir, 'stderr.log');
  const child = spawn('/bin/sh', ['-c', 'out=$0; err=$1; shift; exec "$@" >>"$out" 2>>"$err"', out, err, TORCH_PYTHON, SUPERVISOR, '--run-dir', runDir, '--nproc', String(nproc), '--', TORCH_PYTHON, DDP_SCRIPT, ...args], { detached: true, stdio: 'ignore', cwd: runDir });
  const done = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { pgid: child.pid!, done };
}

async function readRun(runDir: string) {
  const batch = await new GrowingFileReader(path.join(runDir, 'metrics.jsonl'), metricsDecoder).read();
  const history = new RunHistory();
  for (const e of batch.entries) history.apply(e.event);
  const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8'));
  return { batch, history, manifest };
}

describe('Python companion with real PyTorch (CPU, gloo)', function () {
  this.timeout(180_000);
  let tmp: string;
  const groups: number[] = [];
  beforeEach(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-py-'))));
  afterEach(() => {
    for (const g of groups.splice(0)) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  });

  it('passes its own unit tests (log, watch in forward, backward and the update, integrations)', () => {
    const r = spawnSync(TORCH_PYTHON, ['-m', 'unittest', 'discover', '-s', path.join(repoRoot, 'python', 'tests')], { encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /Ran \d+ tests/);
  });

  it('2 ranks by the environment rendezvous: every event valid, the planted NaN named by module and rank, completed', async () => {
    const runDir = runDirWithManifest(tmp, 'ddp');
    const run = supervise(runDir, 2, ['--steps', '20', '--nan-step', '8', '--nan-rank', '1', '--eval-every', '10']);
    groups.push(run.pgid);
    assert.equal(await run.done, 0, readFileSync(path.join(runDir, 'stderr.log'), 'utf8'));
    const { batch, history, manifest } = await readRun(runDir);
    assert.deepEqual(batch.problems, [], 'the schema accepts every line');
    assert.deepEqual([...history.step.loss.steps], Array.from({ length: 20 }, (_, i) => i + 1));
    assert.ok(history.step.loss.values[0] > 3 && history.step.loss.values[6] < history.step.loss.values[0], 'the loss falls before the NaN');
    assert.deepEqual([...history.valLoss.steps], [10, 20]);
    assert.equal(history.start?.world.size, 2);
    assert.equal(history.end?.status, 'completed');
    const first = history.anomalies[0];
    assert.deepEqual(first.where, { phase: 'forward', layer: 'blocks.1.mlp', op: 'Mlp', rank: 1 });
    assert.equal(first.step, 8);
    const dump = JSON.parse(readFileSync(path.join(runDir, first.dump!), 'utf8'));
    assert.equal(dump.format, 'fsdp-studio-nan-dump');
    assert.equal(dump.tokens.length, 8, 'the batch of rank 1');
    // Rank 0 learns of it from the averaged gradients: its update made the parameters NaN.
    assert.ok(history.anomalies.some((a) => a.where.rank === 0 && a.where.phase === 'optimizer' && a.step === 9), JSON.stringify(history.anomalies));
    assert.equal(manifest.status, 'completed');
    assert.equal(manifest.pids.length, 3, 'the supervisor and two ranks');
  });

  it('one rank failing stops the other; the run is failed with the rank and its last words', async () => {
    const runDir = runDirWithManifest(tmp, 'fails');
    const run = supervise(runDir, 2, ['--steps', '50', '--nan-step', '3', '--nan-rank', '1', '--on-nan', 'raise']);
    groups.push(run.pgid);
    assert.equal(await run.done, 1);
    const { history, manifest } = await readRun(runDir);
    assert.equal(history.end?.status, 'failed');
    assert.match(history.end?.reason ?? '', /^rank 1 exited with status 1: FloatingPointError: NaN in forward of blocks\.1\.mlp/);
    assert.equal(manifest.status, 'failed');
    assert.equal(history.anomalies[0].action, 'stop');
  });

  it('installs with pip from the repository, with no dependency', () => {
    const src = path.join(tmp, 'src');
    cpSync(path.join(repoRoot, 'python'), src, { recursive: true, filter: (p) => !p.includes('__pycache__') });
    const target = path.join(tmp, 'site');
    const r = spawnSync(TORCH_PYTHON, ['-m', 'pip', 'install', '--no-deps', '--no-build-isolation', '--no-index', '--target', target, src], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const check = spawnSync(TORCH_PYTHON, ['-c', 'import fsdp_studio, fsdp_studio.nan_watch, fsdp_studio.supervise; print(fsdp_studio.__file__)'], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: target }, cwd: tmp });
    assert.equal(check.status, 0, check.stderr);
    assert.ok(check.stdout.startsWith(target), check.stdout);
    assert.ok(!existsSync(path.join(repoRoot, 'python', 'build')), 'nothing built in the repository');
  });
});
