// A person's own training command launched as the editor launches it (runs/launch/command-launcher.ts):
// a 2-rank DDP script (PyTorch 2 from .venv, gloo) started by the companion's supervisor with the
// environment rendezvous, on this machine and on an SSH host (real sshd on 127.0.0.1, the companion
// copied there); watched live with every step once; Stop (SIGTERM to the process group) stops every
// rank after the same step; a relaunch in the same folder resumes with every step once; the planted
// NaN is named by module and rank. And a command that logs only TensorBoard event files fills the
// loss chart from them.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadLaunchSpec, type ResolvedLaunchSpec } from '../../core/config/launch-spec';
import { gracefulStopSignal } from '../../runs/launch/mpirun';
import type { CommandLaunchRequest } from '../../runs/launch/command-launcher';
import { launchRun } from '../../runs/launch/launch-run';
import { previousOf, testLaunchEnvironment } from '../harness/launch-environment';
import type { LaunchedRun } from '../../runs/launch/launcher';
import { LocalMachine } from '../../runs/machines/local-machine';
import type { RunMachine } from '../../runs/machines/run-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { readRunOnce } from '../../cli/runs/read-once';
import { nonFiniteAtEnd } from '../../core/runs/nonfinite-scalars';
import type { RunHistory } from '../../core/runs/run-history';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { repoRoot } from '../../scripts/code-server';
import { syntheticLoss } from '../harness/synthetic-run';
import { LoopbackSshd } from '../harness/sshd';
import { until as untilHeld, untilValue } from '../harness/until';
import { DDP_SCRIPT, VENV_PYTHON } from '../harness/pytorch';

const STEPS = 12;
/** The step the first start is held after (ddp_train.py's --hold-at) until the test has stopped it. */
const HOLD_AT = 5;

/** A 1-layer GPT-2 under the Hugging Face Trainer, on the CPU, logging nowhere but its printed dicts. */
const HF_TRAINER_SCRIPT = `import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
class Tokens(torch.utils.data.Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        x = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": x, "labels": x}
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2))
args = TrainingArguments(output_dir="hf-out", max_steps=6, logging_steps=2, per_device_train_batch_size=4, eval_strategy="steps", eval_steps=4, report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True)
Trainer(model=model, args=args, train_dataset=Tokens(), eval_dataset=Tokens()).train()
`;
// Bounds for a loaded, shared machine: two ranks of torch 2.13 take about three times the CPU of
// Debian's 1.13 to start (10 s against 3.6 s, measured at load ~15), and CI runs beside other work.
const until = (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 240_000) =>
  untilHeld(what, cond, timeoutMs, 100);

function writeSpec(
  dir: string,
  body: string,
  name = 'ddp.fsdp-launch.yaml',
): { specPath: string; spec: ResolvedLaunchSpec } {
  const specPath = path.join(dir, name);
  writeFileSync(specPath, body);
  const { spec, problems } = loadLaunchSpec(body, specPath);
  assert.ok(spec, JSON.stringify(problems));
  return { specPath, spec };
}

/**
 * While this file exists the run waits after step HOLD_AT (a stop signal ends the wait): the Stop
 * cannot race the run's end however loaded the machine is. The SSH host is this machine, so its
 * ranks see the file too.
 */
const holdFile = (dir: string) => path.join(dir, 'hold');

function ddpSpec(dir: string, target = 'local'): CommandLaunchRequest {
  const command = [
    VENV_PYTHON,
    DDP_SCRIPT,
    '--steps',
    String(STEPS),
    '--checkpoint',
    path.join(dir, 'ckpt'),
    '--save-every',
    '1000',
    '--nan-step',
    '10',
    '--nan-rank',
    '1',
    '--hold-at',
    String(HOLD_AT),
    '--hold-while',
    holdFile(dir),
  ];
  return writeSpec(
    dir,
    [
      `command: ${JSON.stringify(command)}`,
      'nproc_per_node: 2',
      `cwd: ${JSON.stringify(dir)}`,
      `target: ${target}`,
      'env: {OMP_NUM_THREADS: 1}',
      '',
    ].join('\n'),
  );
}

async function launchStopRelaunch(
  machine: RunMachine,
  launch: (resume?: LaunchedRun) => Promise<LaunchedRun>,
  watches: RunWatch[],
  hold: string,
): Promise<RunWatch> {
  writeFileSync(hold, '');
  const first = await launch();
  const watch = new RunWatch({ target: machine.target, runDir: first.runDir }, machine);
  watches.push(watch);
  await watch.start();
  await until(`step ${HOLD_AT}`, () => (watch.history.lastStep ?? 0) >= HOLD_AT);
  await watch.refreshManifest();
  assert.equal(watch.manifest?.kind, 'command');
  assert.equal(watch.manifest?.status, 'running');
  assert.equal(watch.manifest?.pids?.length, 3, 'the supervisor and its two ranks');
  const stop = gracefulStopSignal(watch.manifest?.command);
  assert.equal(stop, 'SIGTERM');
  await machine.signal(first.pgid, stop);
  await until('run_end', () => !!watch.history.end);
  assert.equal(watch.history.end?.status, 'stopped', JSON.stringify(watch.history.end));
  const stoppedAt = watch.history.lastStep!;
  assert.ok(stoppedAt < STEPS);
  await until('the process group gone', async () => (await machine.isAlive(first.pgid)) === false, 30_000);
  const out = (await machine.readFile(`${first.runDir}/stdout.log`, 1 << 16)).toString();
  assert.match(out, new RegExp(`rank 0: stopped after step ${stoppedAt}`));
  assert.match(out, new RegExp(`rank 1: stopped after step ${stoppedAt}`));
  rmSync(hold);

  await launch(first);
  watch.follow();
  // Any end but the first start's stop, then completed: a failed relaunch fails at once, and one that
  // never ends fails with what its folder says.
  const said = async () => {
    const stderr = (await machine.readFile(`${first.runDir}/stderr.log`, 1 << 20)).toString();
    const manifest = await machine.readManifest(first.runDir).catch(() => undefined);
    return `run.json: ${manifest?.status} (pids ${manifest?.pids?.join(', ')}); stderr ends: ${stderr.slice(-3000)}`;
  };
  const end = await untilValue(
    'the relaunched run to end',
    async () => watch.history.end,
    (e) => !!e && e.status !== 'stopped',
    300_000,
    100,
  ).catch(async (e: Error) => assert.fail(`${e.message}; ${await said()}`));
  if (end?.status !== 'completed') assert.fail(`relaunched run: ${JSON.stringify(end)}; ${await said()}`);
  assert.deepEqual(
    [...watch.history.step.loss.steps],
    Array.from({ length: STEPS }, (_, i) => i + 1),
    'every step once',
  );
  assert.deepEqual(watch.problems, []);
  const nan = watch.history.anomalies.find((a) => a.where.phase === 'forward');
  assert.deepEqual(nan?.where, { phase: 'forward', layer: 'blocks.1.mlp', op: 'Mlp', rank: 1 });
  const dump = JSON.parse((await machine.readFile(`${first.runDir}/${nan!.dump}`, 1 << 20)).toString());
  assert.equal(dump.stats.find((s: { nonfinite: number }) => s.nonfinite > 0).layer, 'blocks.1.mlp');
  return watch;
}

describe("launching a person's own command (real PyTorch, real processes, real sshd on 127.0.0.1)", function () {
  this.timeout(10 * 60_000);
  let tmp: string;
  const watches: RunWatch[] = [];
  const groups: Array<[RunMachine, number]> = [];
  beforeEach(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-cmd-'))));
  afterEach(async () => {
    for (const w of watches.splice(0)) w.dispose();
    for (const [m, g] of groups.splice(0)) await m.signal(g, 'SIGKILL').catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  });

  it('on this machine: 2 ranks by the environment rendezvous, stopped and relaunched, every step once, the NaN named', async () => {
    const local = new LocalMachine();
    const req = ddpSpec(tmp);
    await launchStopRelaunch(
      local,
      async (resume) => {
        const manifest = resume && (await local.readManifest(resume.runDir));
        const request = resume ? { ...req, resumeRunDir: resume.runDir } : req;
        const launched = (await launchRun(
          { kind: 'command', request },
          { kind: 'local' },
          testLaunchEnvironment({ local }),
          previousOf(manifest),
        )) as LaunchedRun;
        groups.push([local, launched.pgid]);
        return launched;
      },
      watches,
      holdFile(tmp),
    );
  });

  it('a command that logs only TensorBoard event files: its tags fill the loss chart, the run completes', async () => {
    const local = new LocalMachine();
    const writer = path.join(repoRoot, 'test', 'harness', 'tensorboard-file.ts');
    const req = writeSpec(
      tmp,
      [
        `command: ${JSON.stringify([process.execPath, '--import', 'tsx', writer, '--dir', 'tb/Nov23_host', '--steps', '60', '--rate', '40'])}`,
        `cwd: ${JSON.stringify(repoRoot)}`,
        `logs: {tensorboard: ${JSON.stringify(path.join(tmp, 'tb'))}}`,
        '',
      ].join('\n'),
      'tb.fsdp-launch.yaml',
    );
    // The writer's --dir is relative to cwd: make it land under the spec's TensorBoard folder.
    req.spec.command.argv[req.spec.command.argv.indexOf('tb/Nov23_host')] = path.join(tmp, 'tb', 'Nov23_host');
    const launched = (await launchRun(
      { kind: 'command', request: req },
      { kind: 'local' },
      testLaunchEnvironment({ local }),
    )) as LaunchedRun;
    groups.push([local, launched.pgid]);
    const watch = new RunWatch({ target: 'local', runDir: launched.runDir }, local);
    watches.push(watch);
    await watch.start();
    await until('the run to end', () => watch.history.end?.status === 'completed');
    await until('step 60 from the event file', () => watch.history.lastStep === 60, 10_000).catch((e: Error) => {
      throw new Error(
        `${e.message}; files ${JSON.stringify(watch.logFiles)}; last step ${watch.history.lastStep}; ${readFileSync(path.join(launched.runDir, 'stderr.log'), 'utf8')}`,
      );
    });
    assert.deepEqual(
      [...watch.history.step.loss.steps],
      Array.from({ length: 60 }, (_, i) => i + 1),
    );
    watch.history.step.loss.values.forEach((v, i) => assert.equal(v, Math.fround(syntheticLoss(i + 1))));
    assert.equal(watch.history.tagOf('loss'), 'train/loss');
    assert.equal(watch.manifest?.logs?.tensorboard, path.join(tmp, 'tb'));
    assert.equal(watch.logFiles.length, 1);
  });

  it("a script that only prints (nanoGPT's lines): its loss, validation loss and step time fill the charts", async () => {
    const local = new LocalMachine();
    const script = path.join(repoRoot, 'test', 'pytorch', 'print_only_train.py');
    const req = writeSpec(
      tmp,
      [
        `command: ${JSON.stringify([VENV_PYTHON, script, '--steps', '30', '--step-sleep', '0.05', '--eval-every', '10'])}`,
        `cwd: ${JSON.stringify(tmp)}`,
        '',
      ].join('\n'),
      'print.fsdp-launch.yaml',
    );
    const launched = (await launchRun(
      { kind: 'command', request: req },
      { kind: 'local' },
      testLaunchEnvironment({ local }),
    )) as LaunchedRun;
    groups.push([local, launched.pgid]);
    const watch = new RunWatch({ target: 'local', runDir: launched.runDir }, local);
    watches.push(watch);
    await watch.start();
    await until('the run to end', () => watch.history.end?.status === 'completed');
    await until('step 30 from stdout', () => watch.history.lastStep === 30, 10_000);
    const out = readFileSync(path.join(launched.runDir, 'stdout.log'), 'utf8');
    assert.deepEqual(
      [...watch.history.step.loss.steps],
      Array.from({ length: 31 }, (_, i) => i),
      'every printed iter once',
    );
    const printedLoss = [...out.matchAll(/^iter (\d+): loss ([\d.]+)/gm)].map((m) => Number(m[2]));
    assert.deepEqual([...watch.history.step.loss.values], printedLoss);
    assert.deepEqual([...watch.history.valLoss.steps], [0, 10, 20, 30]);
    assert.equal(watch.history.tagOf('loss'), 'printed/loss');
    assert.equal(watch.history.tagOf('step_ms'), 'printed/time_ms');
    assert.equal(watch.history.step.mfu.length, 0, 'an MFU of -100% is "not measured"');
    assert.deepEqual(watch.history.printed, { file: 'stdout', format: 'nanoGPT', counted: false });
    // Each step has a time, in order, within the run.
    const times = [...watch.history.step.time.values];
    assert.ok(times.every((t, i) => i === 0 || t >= times[i - 1]));
    assert.ok(times[0] >= watch.history.firstStartTime! - 1 && times[times.length - 1] <= watch.history.end!.time + 5);
  });

  it("the Hugging Face Trainer's printed dicts (transformers 5, nothing else logged) fill the loss and learning-rate charts", async () => {
    const local = new LocalMachine();
    const script = path.join(tmp, 'hf_train.py');
    writeFileSync(script, HF_TRAINER_SCRIPT);
    const req = writeSpec(
      tmp,
      [`command: ${JSON.stringify([VENV_PYTHON, script])}`, `cwd: ${JSON.stringify(tmp)}`, ''].join('\n'),
      'hf.fsdp-launch.yaml',
    );
    const launched = (await launchRun(
      { kind: 'command', request: req },
      { kind: 'local' },
      testLaunchEnvironment({ local }),
    )) as LaunchedRun;
    groups.push([local, launched.pgid]);
    const watch = new RunWatch({ target: 'local', runDir: launched.runDir }, local);
    watches.push(watch);
    await watch.start();
    await until('the run to end', () => !!watch.history.end, 300_000);
    assert.equal(
      watch.history.end?.status,
      'completed',
      readFileSync(path.join(launched.runDir, 'stderr.log'), 'utf8').slice(-2000),
    );
    await until('three logs', () => watch.history.step.loss.length === 3, 10_000);
    // max_steps 6, logging_steps 2: three training logs, numbered 1, 2, 3 (the Trainer prints no step).
    assert.deepEqual([...watch.history.step.loss.steps], [1, 2, 3]);
    assert.equal(watch.history.step.lr.length, 3);
    assert.deepEqual(watch.history.printed, { file: 'stdout', format: 'Hugging Face Trainer', counted: true });
    // Its evals (at steps 4 and 6: eval_steps 4, and at the end) belong to the log printed before them.
    assert.deepEqual([...watch.history.valLoss.steps], [2, 3]);
  });

  it('the Hugging Face Trainer diverging (learning_rate 1e8): its NaN grad norm beside the stand-in loss of 0, read alike by the watch and fsdp-runs show', async () => {
    const local = new LocalMachine();
    const script = path.join(tmp, 'hf_diverge.py');
    writeFileSync(
      script,
      HF_TRAINER_SCRIPT.replace('logging_steps=2', 'logging_steps=1, learning_rate=1e8')
        .replace(', eval_strategy="steps", eval_steps=4', '')
        .replace(', eval_dataset=Tokens()', ''),
    );
    const req = writeSpec(
      tmp,
      [`command: ${JSON.stringify([VENV_PYTHON, script])}`, `cwd: ${JSON.stringify(tmp)}`, ''].join('\n'),
      'hf-nan.fsdp-launch.yaml',
    );
    const launched = (await launchRun(
      { kind: 'command', request: req },
      { kind: 'local' },
      testLaunchEnvironment({ local }),
    )) as LaunchedRun;
    groups.push([local, launched.pgid]);
    const watch = new RunWatch({ target: 'local', runDir: launched.runDir }, local);
    watches.push(watch);
    await watch.start();
    await until('the run to end', () => !!watch.history.end, 300_000);
    const out = readFileSync(path.join(launched.runDir, 'stdout.log'), 'utf8');
    assert.equal(watch.history.end?.status, 'completed', out.slice(-2000));
    await until('six logs', () => watch.history.step.loss.length === 6, 10_000);
    // The Trainer's own output: a loss of 0 where the loss was NaN (logging_nan_inf_filter), the grad norm as it was.
    const firstNan =
      out
        .split('\n')
        .filter((l) => l.startsWith("{'loss'"))
        .findIndex((l) => /'grad_norm': 'nan'/.test(l)) + 1;
    assert.ok(firstNan > 0, out.slice(-2000));
    assert.deepEqual(
      watch.history.nonFinite.list().map(({ tag, step, rank, source }) => ({ tag, step, rank, source })),
      [{ tag: 'printed/grad_norm', step: firstNan, rank: null, source: 'printed' }],
    );
    assert.equal(watch.history.nonFiniteLossSince(), undefined, 'the logged loss is finite');
    assert.equal(
      nonFiniteAtEnd(watch.history, true)?.text,
      `the loss is hidden by logging_nan_inf_filter; the gradient norm is NaN since step ${firstNan}`,
    );
    // fsdp-runs show reads the run folder through the same printed-output reader.
    const once = await readRunOnce(local, launched.runDir);
    assert.deepEqual(
      once.history.nonFinite.list().map(({ tag, step }) => [tag, step]),
      [['printed/grad_norm', firstNan]],
    );
    const summary = (h: RunHistory) =>
      h.scalars.tags().map((t) => [t, h.scalars.summary(t)?.count, h.scalars.summary(t)?.last_value]);
    assert.deepEqual(summary(once.history), summary(watch.history));
  });

  describe('over ssh', () => {
    let sshd: LoopbackSshd;
    let ssh: SshMachine;
    let base: string;
    before(async () => {
      sshd = await LoopbackSshd.start();
      ssh = new SshMachine(sshd.alias, () => ({ configFile: sshd.clientConfig }));
      base = mkdtempSync(path.join(os.tmpdir(), 'fsdp-cmd-remote '));
    });
    after(async () => {
      await sshd?.stop();
      rmSync(base, { recursive: true, force: true });
    });

    it('copies the companion once, launches detached on the host, stops, relaunches, every step once', async () => {
      const req = ddpSpec(tmp, sshd.alias);
      const progress: string[] = [];
      const env = testLaunchEnvironment({
        ssh: new Map([[sshd.alias, ssh]]),
        sshSettings: () => ({ configFile: sshd.clientConfig }),
        remoteBase: base,
      });
      await launchStopRelaunch(
        ssh,
        async (resume) => {
          const manifest = resume && (await ssh.readManifest(resume.runDir));
          const request = resume ? { ...req, resumeRunDir: resume.runDir } : req;
          const launched = (await launchRun({ kind: 'command', request }, { kind: 'ssh', host: sshd.alias }, env, {
            progress: (m) => progress.push(m),
            ...previousOf(manifest),
          })) as LaunchedRun;
          groups.push([ssh, launched.pgid]);
          return launched;
        },
        watches,
        holdFile(tmp),
      );
      assert.equal(progress.filter((m) => m.includes('companion')).length, 1, `copied once: ${progress.join(' | ')}`);
      assert.ok(existsSync(path.join(base, 'runs')));
      const manifest = JSON.parse(
        readFileSync(
          path.join(base, 'runs', (await ssh.listRunDirs(path.join(base, 'runs')))[0].split('/').pop()!, 'run.json'),
          'utf8',
        ),
      );
      assert.equal(manifest.target, sshd.alias);
      assert.equal(manifest.status, 'completed');
    });

    it('refuses a launcher the host does not have, or a folder it lacks, before anything starts there', async () => {
      const env = testLaunchEnvironment({
        ssh: new Map([[sshd.alias, ssh]]),
        sshSettings: () => ({ configFile: sshd.clientConfig }),
        remoteBase: base,
      });
      const runsThere = () => (existsSync(path.join(base, 'runs')) ? readdirSync(path.join(base, 'runs')) : []);
      const before = runsThere();
      const launch = (body: string) =>
        launchRun(
          { kind: 'command', request: writeSpec(tmp, body, 'ds.fsdp-launch.yaml') },
          { kind: 'ssh', host: sshd.alias },
          env,
          { progress: () => undefined },
        );
      // deepspeed is installed nowhere here; the host's own PATH and the spec's env are what is searched.
      await assert.rejects(
        launch(
          `command: [deepspeed, --num_gpus, "1", train.py]\ntarget: ${sshd.alias}\ncwd: "~"\nenv: {OMP_NUM_THREADS: 1}\n`,
        ),
        new RegExp(
          `^Error: cannot start deepspeed on ${sshd.alias}: deepspeed is not on the PATH\\. DeepSpeed installs it`,
        ),
      );
      const gone = path.join(base, 'no such folder');
      await assert.rejects(
        launch(`command: [python3, train.py]\ntarget: ${sshd.alias}\ncwd: ${JSON.stringify(gone)}\n`),
        // A path with spaces is quoted whole in the message (1997c72: a value is never shown cut up).
        { message: `the command's folder ${JSON.stringify(gone)} is not on ${sshd.alias}` },
      );
      assert.deepEqual(runsThere(), before, 'no run folder made');
    });
  });
});
