// The PyTorch DDP sample a new user starts from, run as the editor runs it: samples/ddp-python.fsdp-launch.yaml
// loaded as written and launched through the one launch door (runs/launch/launch-run.ts) with the
// project's .venv (its command names ../.venv/bin/python), 2 ranks of a plain `python` command on
// this machine's CPU, watched live to its end. The script logs through the companion, so its loss,
// learning rate and gradient norm fill the dashboard's series, every step once.
// (samples/pytorch/fsdp2_train.py, the FSDP2 sample, runs in pytorch2-runs.test.ts.)
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import { launchRun } from '../../runs/launch/launch-run';
import type { LaunchedRun } from '../../runs/launch/launcher';
import { LocalMachine } from '../../runs/machines/local-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { repoRoot } from '../../scripts/code-server';
import { testLaunchEnvironment } from '../harness/launch-environment';
import { VENV_PYTHON } from '../harness/pytorch';
import { until } from '../harness/until';

const SPEC = path.join(repoRoot, 'samples', 'ddp-python.fsdp-launch.yaml');

describe("samples: the PyTorch DDP sample runs as launched from its spec (real processes, .venv's PyTorch 2)", function () {
  this.timeout(10 * 60_000);
  const local = new LocalMachine();
  let tmp: string;
  let watch: RunWatch | undefined;
  let launched: LaunchedRun | undefined;
  before(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-samples-'))));
  after(async () => {
    watch?.dispose();
    if (launched) await local.signal(launched.pgid, 'SIGKILL').catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("samples/ddp-python.fsdp-launch.yaml: 2 ranks complete 60 steps, the companion's loss, lr and grad norm read every step once, the loss falls", async () => {
    assert.ok(existsSync(VENV_PYTHON), `${VENV_PYTHON}: the project's Python environment is made by the test set-up`);
    const { spec, problems } = loadLaunchSpec(readFileSync(SPEC, 'utf8'), SPEC);
    assert.ok(spec, JSON.stringify(problems));
    // The one change: the run folder in a temporary folder instead of the repository's samples/runs/.
    const request = { specPath: SPEC, spec: { ...spec, runsDir: tmp } };
    launched = (await launchRun(
      { kind: 'command', request },
      { kind: 'local' },
      testLaunchEnvironment({ local }),
    )) as LaunchedRun;
    watch = new RunWatch({ target: 'local', runDir: launched.runDir }, local);
    await watch.start();
    watch.follow();
    const log = (name: string) => readFileSync(path.join(launched!.runDir, name), 'utf8').slice(-3000);
    await until('the run ends', () => !!watch!.history.end, 8 * 60_000, 500).catch((e: Error) => {
      throw new Error(`${e.message}; last step read ${watch!.history.lastStep}\n${log('stderr.log')}`);
    });
    assert.equal(watch.history.end?.status, 'completed', `${JSON.stringify(watch.history.end)}\n${log('stderr.log')}`);
    await until('step 60 read', () => watch!.history.lastStep === 60, 60_000, 200);
    const steps = Array.from({ length: 60 }, (_, i) => i + 1);
    const { loss, lr, grad_norm } = watch.history.step;
    assert.deepEqual([...loss.steps], steps, 'every step once');
    assert.deepEqual([...lr.steps], steps);
    assert.deepEqual([...grad_norm.steps], steps);
    const losses = [...loss.values] as number[];
    assert.ok(
      losses.every((v) => Number.isFinite(v)),
      JSON.stringify(losses),
    );
    // A byte-level model starts near ln(vocab); 60 steps of AdamW at 3e-3 bring it well below.
    assert.ok(losses[59] < losses[0] - 1, `loss ${losses[0]} → ${losses[59]}`);
    assert.match(log('stdout.log'), /step 60: loss \d/);
  });
});
