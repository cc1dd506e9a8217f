// People's own PyTorch 2 training launched as the editor launches it (a launch spec through
// runs/launch/command-launcher.ts, the companion's supervisor around it), with the project's .venv
// (torch 2.13 CPU, transformers, accelerate, lightning, tensorboard): `torchrun --nproc_per_node 2`
// with FSDP2 fully_shard on gloo and DCP checkpoints, a Hugging Face Trainer, `accelerate launch`
// with 2 CPU processes, a Lightning Trainer. Each is watched live (its TensorBoard files and the
// companion's events), stopped as Stop stops it (SIGTERM to the run's process group: torchrun and
// accelerate pass it to every rank), started again in the same folder — continuing from its last
// checkpoint with every step once — and read by `fsdp-runs show`. A NaN planted in one module of the
// Hugging Face model is named by fsdp_studio.watch. (The editor's side: e2e/launch-command.test.ts.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import type { CommandLaunchRequest } from '../../runs/launch/command-launcher';
import { launchRun } from '../../runs/launch/launch-run';
import type { LaunchedRun } from '../../runs/launch/launcher';
import { LocalMachine } from '../../runs/machines/local-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { repoRoot } from '../../scripts/code-server';
import { previousOf, testLaunchEnvironment } from '../harness/launch-environment';
import { VENV_PYTHON } from '../harness/pytorch';
import { until as untilHeld } from '../harness/until';

const SCRIPTS = path.join(repoRoot, 'test', 'pytorch');
/** The PyTorch sample npm start opens (samples/fsdp2-torchrun.fsdp-launch.yaml runs it), on the sample data. */
const FSDP2_SAMPLE = path.join(repoRoot, 'samples', 'pytorch', 'fsdp2_train.py');
const SAMPLE_TOKENS = path.join(repoRoot, 'samples', 'data', 'fortunes-byte-train.tok');
const VENV_BIN = path.dirname(VENV_PYTHON);
const until = (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 240_000) =>
  untilHeld(what, cond, timeoutMs, 200);

interface Case {
  name: string;
  command: string[];
  /** The folder the spec names for TensorBoard event files. */
  tensorboard: string;
  steps: number;
  /** The step of the first optimizer step as the framework logs it: 1, Lightning's 0. */
  firstStep?: number;
  /** Where the run says it stopped (each rank, for launchers with several). */
  stoppedLines: RegExp[];
  /**
   * The file the script's --hold-while names: while it exists the first start waits after the step
   * the test stops at, so the Stop cannot race the run's end however loaded the machine is; removed
   * before the resume. Without one (the FSDP2 sample, which has no such option) its steps' sleep
   * stands in.
   */
  hold?: string;
}

function request(dir: string, c: Case): CommandLaunchRequest {
  const specPath = path.join(dir, `${c.name}.fsdp-launch.yaml`);
  const body = [
    `name: ${c.name}`,
    `command: ${JSON.stringify(c.command)}`,
    `cwd: ${JSON.stringify(dir)}`,
    `python: ${JSON.stringify(VENV_PYTHON)}`,
    `logs: {tensorboard: ${JSON.stringify(c.tensorboard)}}`,
    'env: {OMP_NUM_THREADS: 1, HF_HUB_OFFLINE: 1, TOKENIZERS_PARALLELISM: "false"}',
    '',
  ].join('\n');
  writeFileSync(specPath, body);
  const { spec, problems } = loadLaunchSpec(body, specPath);
  assert.ok(spec, JSON.stringify(problems));
  return { specPath, spec };
}

/** A TCP port free on 127.0.0.1 now (for a launcher that needs one named). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function fsdpRunsShow(target: string): {
  tags: Record<string, { count: number; first_step: number; last_step: number }>;
} {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, 'cli', 'fsdp-runs.ts'), 'show', target, '--json'],
    { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('PyTorch 2 runs launched from launch specs (torchrun + FSDP2, Hugging Face, accelerate, Lightning; real processes)', function () {
  this.timeout(15 * 60_000);
  let tmp: string;
  const local = new LocalMachine();
  const watches: RunWatch[] = [];
  const groups: number[] = [];
  beforeEach(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-pt2-'))));
  afterEach(async () => {
    for (const w of watches.splice(0)) w.dispose();
    for (const g of groups.splice(0)) await local.signal(g, 'SIGKILL').catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Launch, stop after `stopAfter` steps as Stop does, start again in the same folder, run to the end: every step once. */
  /** What run.json says and which of its processes live, for a failure's message. */
  async function runState(runDir: string): Promise<string> {
    const m = await local.readManifest(runDir).catch(() => undefined);
    const alive = (m?.pids ?? []).map((pid) => {
      try {
        return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').slice(0, 3).join(' ')}`;
      } catch {
        return `${pid} gone`;
      }
    });
    const stdout = readFileSync(path.join(runDir, 'stdout.log'), 'utf8').slice(-600);
    return `run.json: ${m?.status ?? 'unreadable'}, processes: ${alive.join('; ') || 'none named'}; stdout ends: ${stdout}`;
  }

  async function launchStopResume(
    c: Case,
    stopAfter: number,
  ): Promise<{ watch: RunWatch; runDir: string; stoppedAt: number }> {
    const req = request(tmp, c);
    if (c.hold) writeFileSync(c.hold, '');
    const launch = async (resume?: LaunchedRun) => {
      const manifest = resume && (await local.readManifest(resume.runDir));
      // Through the one door, as the editor launches and resumes (runs/launch/launch-run.ts).
      const request = resume ? { ...req, resumeRunDir: resume.runDir } : req;
      const launched = (await launchRun(
        { kind: 'command', request },
        { kind: 'local' },
        testLaunchEnvironment({ local }),
        previousOf(manifest),
      )) as LaunchedRun;
      groups.push(launched.pgid);
      return launched;
    };
    const started = await launch();
    const watch = new RunWatch({ target: 'local', runDir: started.runDir }, local);
    watches.push(watch);
    await watch.start();
    const stderr = () => readFileSync(path.join(started.runDir, 'stderr.log'), 'utf8').slice(-3000);
    await until(
      `step ${stopAfter} of ${c.name}`,
      () => (watch.history.lastStep ?? 0) >= stopAfter || !!watch.history.end,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${stderr()}`);
    });
    const endedEarly = () => watch.history.end;
    assert.equal(endedEarly(), undefined, `${c.name} ended early: ${JSON.stringify(endedEarly())}\n${stderr()}`);
    await local.signal(started.pgid, 'SIGTERM');
    await until('run_end', () => !!watch.history.end);
    assert.equal(watch.history.end?.status, 'stopped', `${JSON.stringify(watch.history.end)}\n${stderr()}`);
    await until('the process group gone', async () => (await local.isAlive(started.pgid)) === false, 60_000);
    const out = readFileSync(path.join(started.runDir, 'stdout.log'), 'utf8');
    const stoppedAt = Number(c.stoppedLines[0].exec(out)?.[1]);
    assert.ok(stoppedAt >= stopAfter && stoppedAt < c.steps, `stopped after step ${stoppedAt}: ${out}`);
    for (const line of c.stoppedLines)
      assert.equal(Number(line.exec(out)?.[1]), stoppedAt, `every rank stopped after the same step: ${out}`);
    if (c.hold) rmSync(c.hold);

    // Resumed as the editor resumes (extension/commands/show-launched.ts): followed from when the
    // resume was asked for — an end older than that is the last attempt's.
    const askedAt = Date.now() / 1000;
    await launch(started);
    await watch.followResume(askedAt);
    await until(`${c.name} resumed to complete`, () => watch.history.end?.status === 'completed').catch(
      async (e: Error) => {
        throw new Error(
          `${e.message}: ${JSON.stringify(watch.history.end)}; the watch: ${watch.connection.state}, ` +
            `last step ${watch.history.lastStep}; ${await runState(started.runDir)}\n${stderr()}`,
        );
      },
    );
    const first = c.firstStep ?? 1;
    // The resumed start's own event file is found by listing the folder: give a loaded machine time
    // (CI once missed 30 s for the Hugging Face Trainer's last step; not reproduced since).
    await until(`step ${c.steps + first - 1} read`, () => watch.history.lastStep === c.steps + first - 1, 90_000).catch(
      (e: Error) => {
        throw new Error(`${e.message}: last step read ${watch.history.lastStep}\n${stderr()}`);
      },
    );
    assert.deepEqual(
      [...watch.history.step.loss.steps],
      Array.from({ length: c.steps }, (_, i) => i + first),
      'every step once',
    );
    assert.ok(watch.history.step.loss.values.every((v) => v === null || Number.isFinite(v)));
    return { watch, runDir: started.runDir, stoppedAt };
  }

  it("torchrun --nproc_per_node 2 with FSDP2 fully_shard on gloo (the PyTorch sample, on Debian's fortunes): SummaryWriter scalars, Stop reaches both ranks, DCP checkpoint, resumed", async () => {
    const steps = 16;
    const tb = path.join(tmp, 'tb');
    const ckpt = path.join(tmp, 'ckpt');
    const { watch, runDir, stoppedAt } = await launchStopResume(
      {
        name: 'fsdp2',
        command: [
          path.join(VENV_BIN, 'torchrun'),
          '--standalone',
          '--nproc_per_node',
          '2',
          FSDP2_SAMPLE,
          '--data',
          SAMPLE_TOKENS,
          '--batch',
          '4',
          '--seq',
          '32',
          '--steps',
          String(steps),
          '--step-sleep',
          '0.3',
          '--tb',
          tb,
          '--checkpoint',
          ckpt,
          '--save-every',
          '100',
        ],
        tensorboard: tb,
        steps,
        stoppedLines: [/rank 0: stopped after step (\d+)/, /rank 1: stopped after step (\d+)/],
      },
      4,
    );
    // The stop's DCP checkpoint (every rank's shards), the one the second run continued from, and the last.
    assert.ok(existsSync(path.join(ckpt, `step-${stoppedAt}`, '.metadata')));
    assert.deepEqual(
      readdirSync(path.join(ckpt, `step-${stoppedAt}`))
        .filter((f) => f.endsWith('.distcp'))
        .sort(),
      ['__0_0.distcp', '__1_0.distcp'],
    );
    assert.match(
      readFileSync(path.join(runDir, 'stdout.log'), 'utf8'),
      new RegExp(`rank 1: resumed from .*step-${stoppedAt}`),
    );
    assert.equal(watch.history.tagOf('loss'), 'train/loss');
    assert.equal(watch.history.tagOf('grad_norm'), 'train/grad_norm');
    // The ranks torchrun starts, as run.json and run_start (what the header and the toasts read) say them.
    assert.deepEqual(watch.manifest?.world, { size: 2, nproc_per_node: 2 });
    assert.equal(watch.history.start?.world.size, 2);
    const shown = fsdpRunsShow(runDir).tags;
    assert.deepEqual(
      [shown['train/loss'].count, shown['train/loss'].first_step, shown['train/loss'].last_step],
      [steps, 1, steps],
    );
  });

  it('a Hugging Face Trainer (GPT-2 config, random init) with report_to tensorboard and FsdpStudioCallback: stopped, resumed from its checkpoint; a planted NaN named by module', async () => {
    const steps = 8;
    const out = path.join(tmp, 'out');
    const hold = path.join(tmp, 'hold');
    const { watch, runDir } = await launchStopResume(
      {
        name: 'hf-trainer',
        command: [
          VENV_PYTHON,
          path.join(SCRIPTS, 'hf_train.py'),
          '--out',
          out,
          '--steps',
          String(steps),
          '--save-every',
          '100',
          '--nan-step',
          '7',
          '--nan-module',
          'transformer.h.1.mlp',
          '--hold-at',
          '3',
          '--hold-while',
          hold,
        ],
        tensorboard: path.join(out, 'runs'),
        steps,
        stoppedLines: [/stopped after step (\d+)/],
        hold,
      },
      3,
    );
    assert.match(readFileSync(path.join(runDir, 'stdout.log'), 'utf8'), /resuming from .*checkpoint-\d+/);
    // transformers 5 writes under output_dir/runs/, a new event file per start: both read, no step twice.
    const eventFiles = readdirSync(path.join(out, 'runs'), { recursive: true, encoding: 'utf8' }).filter((f) =>
      path.basename(f).startsWith('events.out.tfevents.'),
    );
    assert.equal(eventFiles.length, 2, JSON.stringify(eventFiles));
    assert.equal(watch.history.tagOf('loss'), 'train/loss');
    const nan = watch.history.anomalies.find((a) => a.kind === 'nan');
    assert.deepEqual(nan?.where, { phase: 'forward', layer: 'transformer.h.1.mlp', op: 'GPT2MLP' });
    assert.equal(nan?.step, 7);
    const shown = fsdpRunsShow(runDir).tags;
    assert.equal(shown['train/loss'].last_step, steps);
  });

  it('accelerate launch with 2 CPU processes and FsdpStudioTracker: stopped on both ranks, resumed from its saved state', async () => {
    const steps = 8;
    const hold = path.join(tmp, 'hold');
    const { watch, runDir } = await launchStopResume(
      {
        name: 'accelerate',
        // accelerate's --cpu runs one process (more need mpirun); --multi_gpu starts the processes with torch's
        // elastic launcher, and the script's Accelerator(cpu=True) makes them MULTI_CPU ranks on gloo.
        command: [
          path.join(VENV_BIN, 'accelerate'),
          'launch',
          '--multi_gpu',
          '--num_processes',
          '2',
          '--num_machines',
          '1',
          '--mixed_precision',
          'no',
          '--dynamo_backend',
          'no',
          '--main_process_port',
          String(await freePort()),
          path.join(SCRIPTS, 'accelerate_train.py'),
          '--steps',
          String(steps),
          '--checkpoint',
          path.join(tmp, 'ckpt'),
          '--save-every',
          '100',
          '--hold-at',
          '3',
          '--hold-while',
          hold,
        ],
        tensorboard: path.join(tmp, 'tb'),
        steps,
        stoppedLines: [/rank 0: stopped after step (\d+)/, /rank 1: stopped after step (\d+)/],
        hold,
      },
      3,
    );
    const out = readFileSync(path.join(runDir, 'stdout.log'), 'utf8');
    assert.match(out, /rank 1 of 2: DistributedType\.MULTI_CPU/);
    assert.match(out, /rank 1: resumed at step \d+/);
    assert.equal(watch.history.tagOf('loss'), 'train/loss');
    assert.equal(fsdpRunsShow(runDir).tags['train/loss'].last_step, steps);
  });

  it('a Lightning Trainer with FsdpStudioLogger and its TensorBoardLogger: stopped, resumed from its last checkpoint', async () => {
    const steps = 8;
    const out = path.join(tmp, 'out');
    const hold = path.join(tmp, 'hold');
    const { runDir } = await launchStopResume(
      {
        name: 'lightning',
        command: [
          VENV_PYTHON,
          path.join(SCRIPTS, 'lightning_train.py'),
          '--out',
          out,
          '--steps',
          String(steps),
          '--save-every',
          '100',
          '--hold-at',
          '3',
          '--hold-while',
          hold,
        ],
        tensorboard: path.join(out, 'tb'),
        steps,
        firstStep: 0,
        stoppedLines: [/stopped after step (\d+)/],
        hold,
      },
      3,
    );
    const shown = fsdpRunsShow(runDir).tags;
    assert.equal(shown['train/loss'].last_step, steps - 1);
  });
});
