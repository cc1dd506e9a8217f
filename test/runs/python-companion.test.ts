// The Python companion and its supervisor with real PyTorch 2 (the project's .venv: torch 2.13 CPU,
// gloo): its own unit tests, the framework integrations inside a real Hugging Face Trainer, Lightning
// Trainer and accelerate Accelerator (test_frameworks.py; a missing framework fails here); a 2-rank
// DDP script started with the environment rendezvous, whose every event the metrics protocol's
// schema accepts, whose planted NaN is named by module and rank; one rank failing stops the other;
// workers a launcher starts in sessions of their own are listed in run.json and do not outlive the
// run; `pip install` from the repository; and the package on the oldest Python it supports (3.9).
// (Stop and relaunch: command-launch.test.ts and pytorch2-runs.test.ts.)
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrowingFileReader } from '../../runs/watch/transports/growing-file';
import { metricsDecoder } from '../../runs/watch/decoders/metrics-decoder';
import { RunHistory } from '../../core/runs/run-history';
import { repoRoot } from '../../scripts/code-server';
import { DDP_SCRIPT, SUPERVISOR, VENV_PYTHON } from '../harness/pytorch';

/** Where a Python 3.9 may be: on PATH, or a pyenv version. */
const OLDEST_PYTHONS = [
  'python3.9',
  ...(existsSync(path.join(os.homedir(), '.pyenv', 'versions'))
    ? readdirSync(path.join(os.homedir(), '.pyenv', 'versions'))
        .filter((v) => v.startsWith('3.9'))
        .map((v) => path.join(os.homedir(), '.pyenv', 'versions', v, 'bin', 'python3'))
    : []),
];

function runDirWithManifest(parent: string, name: string): string {
  const dir = path.join(parent, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'run.json'),
    JSON.stringify({
      v: 1,
      run_id: name,
      created: Date.now() / 1000,
      status: 'starting',
      config: { command: 'ddp_train.py' },
      world: { size: 2 },
      host: os.hostname(),
      kind: 'command',
    }),
  );
  return dir;
}

/** Runs the supervisor in a session of its own (as the editor does), output in the run folder. */
function supervise(runDir: string, nproc: number, args: string[]) {
  const out = path.join(runDir, 'stdout.log');
  const err = path.join(runDir, 'stderr.log');
  const child = spawn(
    '/bin/sh',
    [
      '-c',
      'out=$0; err=$1; shift; exec "$@" >>"$out" 2>>"$err"',
      out,
      err,
      VENV_PYTHON,
      SUPERVISOR,
      '--run-dir',
      runDir,
      '--nproc',
      String(nproc),
      '--',
      VENV_PYTHON,
      DDP_SCRIPT,
      ...args,
    ],
    { detached: true, stdio: 'ignore', cwd: runDir },
  );
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

  it('passes its own unit tests, the integrations inside the real Hugging Face, Lightning and accelerate trainers among them', function () {
    this.timeout(600_000);
    const r = spawnSync(
      VENV_PYTHON,
      ['-m', 'unittest', 'discover', '-v', '-s', path.join(repoRoot, 'python', 'tests')],
      {
        encoding: 'utf8',
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', FSDP_STUDIO_FRAMEWORKS: 'required', HF_HUB_OFFLINE: '1' },
      },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /Ran \d+ tests/);
    assert.doesNotMatch(r.stderr, /skipped/);
    // Passed (exit 0, nothing skipped) and ran: each framework's test is named in the verbose listing.
    for (const test of [
      'test_a_trainer_with_the_callback_logs_its_loss_at_its_steps',
      'test_a_trainer_with_the_logger_logs_what_the_module_logs_at_its_steps',
      'test_an_accelerator_logging_with_the_tracker_logs_numbers_at_the_step_given',
    ]) {
      assert.ok(r.stderr.includes(`${test} (test_frameworks.`), `${test} ran`);
    }
  });

  it("a launcher's workers in sessions of their own are listed in run.json while they run, and do not outlive the run", async () => {
    const runDir = runDirWithManifest(tmp, 'workers');
    const script =
      'import subprocess, sys, time\np = subprocess.Popen(["sleep", "300"], start_new_session=True)\nprint(p.pid, flush=True)\ntime.sleep(3)\n';
    const child = spawn(VENV_PYTHON, [SUPERVISOR, '--run-dir', runDir, '--', VENV_PYTHON, '-c', script], {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
      cwd: runDir,
    });
    groups.push(child.pid!);
    let printed = '';
    child.stdout!.on('data', (d: Buffer) => (printed += d));
    let listed: number[] = [];
    const worker = await new Promise<number>((resolve) =>
      child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
    );
    for (let i = 0; i < 50 && !listed.includes(worker); i++) {
      await new Promise((r) => setTimeout(r, 100));
      listed = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { pids?: number[] }).pids ?? [];
    }
    assert.ok(listed.includes(worker), `run.json pids ${JSON.stringify(listed)} name the worker ${worker}`);
    assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0, printed);
    // Ended: gone, or a zombie waiting for whichever process adopted it to reap it.
    const alive = () => {
      try {
        return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${worker}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    assert.equal(alive(), false, 'the worker was ended with the run');
  });

  it('2 ranks by the environment rendezvous: every event valid, the planted NaN named by module and rank, completed', async () => {
    const runDir = runDirWithManifest(tmp, 'ddp');
    const run = supervise(runDir, 2, ['--steps', '20', '--nan-step', '8', '--nan-rank', '1', '--eval-every', '10']);
    groups.push(run.pgid);
    assert.equal(await run.done, 0, readFileSync(path.join(runDir, 'stderr.log'), 'utf8'));
    const { batch, history, manifest } = await readRun(runDir);
    assert.deepEqual(batch.problems, [], 'the schema accepts every line');
    assert.deepEqual(
      [...history.step.loss.steps],
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    assert.ok(
      history.step.loss.values[0] > 3 && history.step.loss.values[6] < history.step.loss.values[0],
      'the loss falls before the NaN',
    );
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
    assert.ok(
      history.anomalies.some((a) => a.where.rank === 0 && a.where.phase === 'optimizer' && a.step === 9),
      JSON.stringify(history.anomalies),
    );
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
    assert.match(
      history.end?.reason ?? '',
      /^rank 1 exited with status 1: FloatingPointError: NaN in forward of blocks\.1\.mlp/,
    );
    assert.equal(manifest.status, 'failed');
    assert.equal(history.anomalies[0].action, 'stop');
  });

  it("a launcher that starts its own ranks (torchrun --nproc_per_node 2): run_start counts them as run.json's world does", () => {
    // runDirWithManifest's run.json says world.size 2, as the editor writes it from the command's options.
    const runDir = runDirWithManifest(tmp, 'launcher');
    const r = spawnSync(VENV_PYTHON, [SUPERVISOR, '--run-dir', runDir, '--', VENV_PYTHON, '-c', 'pass'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const start = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; world?: { size: number } })
      .find((e) => e.type === 'run_start');
    assert.equal(start?.world?.size, 2, 'two ranks, though the supervisor started one process (the launcher)');
    assert.equal(JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')).world.size, 2);
  });

  /** A rank's script: exits once run.json's world says `size`, or after 120 s (the test then fails on run.json). */
  const RANK_WAITS_FOR_WORLD = [
    'import json, os, sys, time',
    'want, until = int(sys.argv[2]), time.monotonic() + 120',
    'while time.monotonic() < until:',
    '    with open(os.path.join(sys.argv[1], "run.json")) as f:',
    '        if json.load(f)["world"]["size"] == want: break',
    '    time.sleep(0.2)',
  ].join('\n');

  it("a launcher whose ranks are not the command's count: run.json's world becomes the ranks' (WORLD_SIZE), the command's count kept", () => {
    // The editor wrote world.size 1 (a command it could not count); the "launcher" starts two ranks
    // with RANK and WORLD_SIZE as torchrun and deepspeed do.
    const runDir = runDirWithManifest(tmp, 'ranks-told');
    const manifestFile = path.join(runDir, 'run.json');
    writeFileSync(
      manifestFile,
      JSON.stringify({ ...JSON.parse(readFileSync(manifestFile, 'utf8')), world: { size: 1 } }),
    );
    const launcher = [
      'import os, subprocess, sys',
      'ranks = [subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], "2"], env=dict(os.environ, RANK=str(r), WORLD_SIZE="2")) for r in range(2)]',
      'sys.exit(max(p.wait() for p in ranks))',
    ].join('\n');
    const r = spawnSync(
      VENV_PYTHON,
      [SUPERVISOR, '--run-dir', runDir, '--', VENV_PYTHON, '-c', launcher, RANK_WAITS_FOR_WORLD, runDir],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const world = JSON.parse(readFileSync(manifestFile, 'utf8')).world;
    assert.deepEqual(world, { size: 2, counted: 'ranks', command_size: 1, nproc_per_node: 2 });
  });

  it("a real torchrun --nproc_per_node auto (the command does not say how many): run.json's world is the ranks torchrun started", () => {
    const runDir = runDirWithManifest(tmp, 'ranks-auto');
    const manifestFile = path.join(runDir, 'run.json');
    // What the editor writes for a command that does not count its ranks (runs/launch/command-launcher.ts).
    writeFileSync(
      manifestFile,
      JSON.stringify({ ...JSON.parse(readFileSync(manifestFile, 'utf8')), world: { size: 1, counted: 'launcher' } }),
    );
    const script = path.join(tmp, 'rank_waits.py');
    // Each rank waits for the world its own WORLD_SIZE names (torchrun's "auto" on a CPU: its core count).
    writeFileSync(script, RANK_WAITS_FOR_WORLD.replace('int(sys.argv[2])', 'int(os.environ["WORLD_SIZE"])'));
    const torchrun = path.join(path.dirname(VENV_PYTHON), 'torchrun');
    const r = spawnSync(
      VENV_PYTHON,
      [SUPERVISOR, '--run-dir', runDir, '--', torchrun, '--standalone', '--nproc_per_node', 'auto', script, runDir],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const world = JSON.parse(readFileSync(manifestFile, 'utf8')).world;
    assert.equal(world.counted, 'ranks');
    assert.equal(world.command_size, undefined, 'the command gave no count');
    assert.ok(world.size >= 1 && world.size === world.nproc_per_node, JSON.stringify(world));
    // torchrun's "auto" without an accelerator starts one rank per CPU, as torch counts them.
    const expected = Number(
      spawnSync(VENV_PYTHON, ['-c', 'import torch._utils as u; print(u.cpu_count())'], {
        encoding: 'utf8',
      }).stdout.trim(),
    );
    assert.equal(world.size, expected);
  });

  it("works on the oldest Python it supports (3.9), without PyTorch: log, the integrations' mappings, the supervisor", function () {
    const python = OLDEST_PYTHONS.find(
      (p) => spawnSync(p, ['-c', 'import sys; assert sys.version_info[:2] == (3, 9)']).status === 0,
    );
    if (!python) {
      console.log(`      no Python 3.9 on this machine (looked for ${OLDEST_PYTHONS.join(', ')}): not run`);
      this.skip();
    }
    const runDir = runDirWithManifest(tmp, 'py39');
    const code = [
      'import json, os, sys',
      'import fsdp_studio',
      'from fsdp_studio.integrations import huggingface, lightning, accelerate',
      'fsdp_studio.init(sys.argv[1])',
      'fsdp_studio.log(1, loss=2.5)',
      'huggingface.on_log(type("S", (), {"global_step": 2, "is_world_process_zero": True})(), {"loss": 2.0})',
      'lightning.log_metrics({"train_loss": 1.5}, 3)',
      'accelerate.log_values({"train/loss": 1.0}, 4)',
    ].join('\n');
    const env = { ...process.env, PYTHONPATH: path.join(repoRoot, 'python'), PYTHONDONTWRITEBYTECODE: '1' };
    const r = spawnSync(python!, ['-c', code, runDir], { encoding: 'utf8', env });
    assert.equal(r.status, 0, r.stderr);
    const supervised = spawnSync(python!, [SUPERVISOR, '--run-dir', runDir, '--', python!, '-c', 'print("hello")'], {
      encoding: 'utf8',
      env,
    });
    assert.equal(supervised.status, 0, supervised.stderr);
    const events = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; step?: number; status?: string });
    assert.deepEqual(
      events.filter((e) => e.type === 'scalars').map((e) => e.step),
      [1, 2, 3, 4],
    );
    assert.equal(events.at(-1)?.status, 'completed');
  });

  it('installs with pip from the repository, with no dependency', () => {
    const src = path.join(tmp, 'src');
    cpSync(path.join(repoRoot, 'python'), src, { recursive: true, filter: (p) => !p.includes('__pycache__') });
    const target = path.join(tmp, 'site');
    const r = spawnSync(
      VENV_PYTHON,
      ['-m', 'pip', 'install', '--no-deps', '--no-build-isolation', '--no-index', '--target', target, src],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const check = spawnSync(
      VENV_PYTHON,
      ['-c', 'import fsdp_studio, fsdp_studio.nan_watch, fsdp_studio.supervise; print(fsdp_studio.__file__)'],
      { encoding: 'utf8', env: { ...process.env, PYTHONPATH: target }, cwd: tmp },
    );
    assert.equal(check.status, 0, check.stderr);
    assert.ok(check.stdout.startsWith(target), check.stdout);
    assert.ok(!existsSync(path.join(repoRoot, 'python', 'build')), 'nothing built in the repository');
  });
});
