// Which Python runs a person's command, with real interpreters and real processes: `python3 train.py`
// under a python3 without torch fails naming that interpreter (path and version); the launch spec's
// python: (or the Python extension's selection, applied by withSelectedPython) runs the command's
// python word and puts its folder first on PATH, so torchrun comes from it too. And the environment
// check's Python rows (runs/machines/python-check.ts) on this machine and over a real sshd.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadLaunchSpec, withSelectedPython, type ResolvedLaunchSpec } from '../../core/config/launch-spec';
import type { LaunchedRun } from '../../runs/launch/launcher';
import { launchRun } from '../../runs/launch/launch-run';
import { LocalMachine } from '../../runs/machines/local-machine';
import { probePython, pythonChecks, pythonInUse } from '../../runs/machines/python-check';
import { launcherProblem } from '../../runs/launch/launcher-check';
import { localLoginHost } from '../../runs/machines/login-host';
import { repoRoot } from '../../scripts/code-server';
import { testLaunchEnvironment } from '../harness/launch-environment';
import { pythonWithoutTorch, VENV_PYTHON } from '../harness/pytorch';
import { LoopbackSshd } from '../harness/sshd';
import { until } from '../harness/until';

const SCRIPT = 'import sys\nimport torch\nprint("ran with", sys.executable, "torch", torch.__version__)\n';
/** PATH without the project's .venv: the python3 found first is the one without torch. */
const pathWith = (bin: string) => [bin, '/usr/local/bin', '/usr/bin', '/bin'].join(':');

describe("which Python runs a person's command (real interpreters, real processes)", function () {
  this.timeout(6 * 60_000);
  let tmp: string;
  let bare: string;
  const local = new LocalMachine();
  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-which-python-'));
    bare = pythonWithoutTorch(path.join(tmp, 'no-torch'));
    writeFileSync(path.join(tmp, 'train.py'), SCRIPT);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  function spec(name: string, lines: string[]): { specPath: string; spec: ResolvedLaunchSpec } {
    const specPath = path.join(tmp, `${name}.fsdp-launch.yaml`);
    const body = [
      ...lines,
      `cwd: ${JSON.stringify(tmp)}`,
      `runs_dir: ${JSON.stringify(path.join(tmp, 'runs'))}`,
      '',
    ].join('\n');
    writeFileSync(specPath, body);
    const { spec: s, problems } = loadLaunchSpec(body, specPath);
    assert.ok(s, JSON.stringify(problems));
    return { specPath, spec: s };
  }

  async function runToEnd(request: {
    specPath: string;
    spec: ResolvedLaunchSpec;
  }): Promise<{ manifest: Record<string, unknown>; stdout: string; runDir: string }> {
    const launched = (await launchRun(
      { kind: 'command', request },
      { kind: 'local' },
      testLaunchEnvironment({ local }),
    )) as LaunchedRun;
    let manifest: Record<string, unknown> | undefined;
    await until(
      'the run to end',
      async () => {
        manifest = (await local.readManifest(launched.runDir)) as unknown as Record<string, unknown>;
        return ['completed', 'failed', 'stopped'].includes(String(manifest?.status));
      },
      240_000,
      200,
    );
    return {
      manifest: manifest!,
      stdout: readFileSync(path.join(launched.runDir, 'stdout.log'), 'utf8'),
      runDir: launched.runDir,
    };
  }

  it('`python3 train.py` under a python3 without torch fails naming that interpreter, its path and version', async () => {
    const { manifest, runDir } = await runToEnd(
      spec('bare', ['command: python3 train.py', `env: {PATH: ${JSON.stringify(pathWith(path.dirname(bare)))}}`]),
    );
    assert.equal(manifest.status, 'failed');
    const reason = String(manifest.end_reason);
    assert.match(reason, /No module named 'torch'/);
    assert.ok(reason.includes(`the Python that ran it, ${bare} (Python 3.`), reason);
    assert.match(
      reason,
      /has no torch: name one that has it in the launch spec's python: key, or select one in the Python extension/,
    );
    const end = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((e) => e.type === 'run_end');
    assert.equal(end.reason, reason, 'the run_end the dashboard shows says the same');
  });

  it('python: naming a Python without torch: the failure names it and says the spec chose it', async () => {
    const { manifest } = await runToEnd(
      spec('chosen-bare', ['command: python3 train.py', `python: ${JSON.stringify(bare)}`]),
    );
    assert.equal(manifest.status, 'failed');
    const reason = String(manifest.end_reason);
    assert.ok(reason.includes(`No module named 'torch' — the Python that ran it, ${bare} (Python 3.`), reason);
    assert.match(
      reason,
      /chosen by the launch spec's python: key \(or the Python extension's selection\): name one that has it there$/,
    );
  });

  it("python: in the spec runs the command's python3 word with that interpreter, even with another python3 first on PATH", async () => {
    const { manifest, stdout } = await runToEnd(
      spec('chosen', [
        'command: python3 train.py',
        `python: ${JSON.stringify(VENV_PYTHON)}`,
        `env: {PATH: ${JSON.stringify(pathWith(path.dirname(bare)))}}`,
      ]),
    );
    assert.equal(manifest.status, 'completed', String(manifest.end_reason));
    assert.match(stdout, new RegExp(`ran with ${VENV_PYTHON.replace(/[.]/g, '\\.')} torch 2\\.`));
  });

  it("the Python extension's selection (no python: in the spec) does the same, and torchrun is found in the selected environment's folder", async () => {
    const req = spec('selected', [
      'command: torchrun --nproc_per_node 1 train.py',
      `env: {PATH: ${JSON.stringify(pathWith(path.dirname(bare)))}, OMP_NUM_THREADS: 1}`,
    ]);
    const selected = { ...req, spec: withSelectedPython(req.spec, VENV_PYTHON) };
    assert.equal(selected.spec.pythonSource, 'Python extension');
    const { manifest, stdout } = await runToEnd(selected);
    assert.equal(manifest.status, 'completed', String(manifest.end_reason));
    assert.match(stdout, /ran with \S+ torch 2\./);
  });

  it("the launcher check looks as the supervisor will: torchrun in the chosen Python's folder, a bare python3 word run by the chosen Python", async () => {
    // Only the torch-less venv on PATH (Debian's python3-torch puts a torchrun in /usr/bin).
    const env = `env: {PATH: ${JSON.stringify(path.dirname(bare))}}`;
    const torchrun = spec('lc-torchrun', ['command: torchrun --nproc_per_node 1 train.py', env]).spec;
    assert.match(
      (await launcherProblem(localLoginHost(), torchrun)) ?? '',
      /torchrun is not on the PATH/,
      'nothing chosen: the PATH as written has no torchrun',
    );
    assert.equal(await launcherProblem(localLoginHost(), withSelectedPython(torchrun, VENV_PYTHON)), undefined);
    const gone = spec('lc-python', ['command: python3 train.py', 'python: /nowhere/bin/python3', env]).spec;
    assert.match(
      (await launcherProblem(localLoginHost(), gone)) ?? '',
      /\/nowhere\/bin\/python3 is not an executable file/,
    );
  });

  it("Check environment's Python rows on this machine: .venv's interpreter, torch 2 without CUDA; a Python without torch; none at all", async () => {
    const venv = await probePython(VENV_PYTHON, { host: 'local' });
    assert.ok(!('error' in venv), JSON.stringify(venv));
    assert.equal(venv.executable, VENV_PYTHON);
    assert.match(venv.torch ?? '', /^2\.13\./);
    assert.equal(venv.cuda, false);
    const [py, torch] = await pythonChecks(VENV_PYTHON, { host: 'local' }, "the Python extension's selection");
    assert.deepEqual(
      [py.name, py.ok, torch.name, torch.ok],
      ['Python on this machine', true, 'PyTorch on this machine', true],
    );
    assert.match(
      py.detail,
      new RegExp(
        `^${VENV_PYTHON.replace(/[.]/g, '\\.')} \\(Python 3\\.\\d+\\.\\d+\\), the Python extension's selection$`,
      ),
    );
    assert.match(torch.detail, /^torch 2\.13\.\S+, CUDA not available \(a CPU-only build\)$/);

    const [, missing] = await pythonChecks(bare, { host: 'local' }, 'python: in x.fsdp-launch.yaml');
    assert.equal(missing.ok, false);
    assert.match(
      missing.detail,
      new RegExp(`ModuleNotFoundError: No module named 'torch' — in ${bare.replace(/[.]/g, '\\.')} \\(Python 3\\.`),
    );
    assert.match(missing.fix ?? '', /-m pip install torch/);

    const [gone, notRun] = await pythonChecks(
      path.join(tmp, 'nowhere', 'python3'),
      { host: 'local' },
      'python3 on PATH',
    );
    assert.equal(gone.ok, false);
    assert.match(gone.detail, /nowhere\/python3 \(python3 on PATH\): .*not found/);
    assert.equal(notRun.notRun, true);
  });

  it('Check environment fails a Python older than 3.9 (a Python 2 named python3) and says which one ran', async () => {
    const real = execFileSync('/bin/sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();
    const dir = mkdtempSync(path.join(tmp, 'py2-'));
    const py2 = path.join(dir, 'python3');
    // Stands in for a Python 2 named python3: the real python3 running the probe it is given, with
    // sys.version_info saying 2.7.18 (the probe reads its version from there, as Python 2's would).
    writeFileSync(
      py2,
      `#!/bin/sh\n[ "$1" = -c ] || exit 2\nexec ${real} -c 'import sys; sys.version_info = (2, 7, 18, "final", 0); sys.version = "2.7.18 (stand-in)"; exec(sys.argv[1])' "$2"\n`,
    );
    chmodSync(py2, 0o755);
    const [py] = await pythonChecks(py2, { host: 'local' }, 'python: in x.fsdp-launch.yaml');
    assert.equal(py.ok, false);
    assert.match(
      py.detail,
      /python3 \(python: in x\.fsdp-launch\.yaml\): FSDP Studio's supervisor needs Python >= 3\.9, found 2\.7\.18 \(/,
    );
    assert.match(py.fix ?? '', /install Python 3\.9 or newer/);
  });

  it("the Python a spec's command runs, as Check environment asks it: the #! line of the sample's torchrun, a bare python3 on the spec's PATH, python:, a host's", () => {
    const sampleFile = path.join(repoRoot, 'samples', 'fsdp2-torchrun.fsdp-launch.yaml');
    const sample = loadLaunchSpec(readFileSync(sampleFile, 'utf8'), sampleFile).spec!;
    const fromShebang = pythonInUse(sample, 'samples/fsdp2-torchrun.fsdp-launch.yaml', '/usr/bin:/bin');
    assert.equal(
      readFileSync(path.join(repoRoot, '.venv', 'bin', 'torchrun'), 'utf8').split('\n')[0],
      `#!${fromShebang.python}`,
    );
    assert.match(path.basename(fromShebang.python), /^python/);
    assert.deepEqual(
      { ...fromShebang, python: 'p' },
      {
        python: 'p',
        chosenBy: "what samples/fsdp2-torchrun.fsdp-launch.yaml's ../.venv/bin/torchrun runs",
        torchNeeded: true,
      },
    );

    const bareSpec = spec('bare-check', [
      'command: python3 train.py',
      `env: {PATH: ${JSON.stringify(pathWith(path.dirname(bare)))}}`,
    ]).spec;
    assert.deepEqual(pythonInUse(bareSpec, 'b.yaml', undefined), {
      python: bare,
      chosenBy: "what b.yaml's python3 runs",
      torchNeeded: true,
    });
    assert.deepEqual(pythonInUse(withSelectedPython(bareSpec, VENV_PYTHON), 'b.yaml', undefined), {
      python: VENV_PYTHON,
      chosenBy: "the Python extension's selection, for b.yaml",
      torchNeeded: true,
    });
    const gone = spec('gone', ['command: no-such-launcher-here train.py']).spec;
    assert.equal(pythonInUse(gone, 'g.yaml', '/usr/bin').missing, true);

    const remote = (lines: string[]) =>
      loadLaunchSpec([...lines, 'target: gpu-box', 'cwd: /srv/x', ''].join('\n'), path.join(tmp, 'r.fsdp-launch.yaml'))
        .spec!;
    assert.deepEqual(pythonInUse(remote(['command: torchrun t.py', 'python: ~/env/bin/python']), 'r.yaml', undefined), {
      python: '~/env/bin/python',
      chosenBy: 'python: in r.yaml',
      torchNeeded: true,
    });
    assert.deepEqual(pythonInUse(remote(['command: /opt/py/bin/python3.11 t.py']), 'r.yaml', undefined), {
      python: '/opt/py/bin/python3.11',
      chosenBy: "r.yaml's command",
      torchNeeded: true,
    });
    assert.deepEqual(pythonInUse(remote(['command: torchrun t.py']), 'r.yaml', undefined), {
      python: 'python3',
      chosenBy: "python3 on its PATH (r.yaml's torchrun may run another)",
      torchNeeded: false,
    });
  });

  describe('over ssh (a real sshd on 127.0.0.1)', () => {
    let sshd: LoopbackSshd;
    before(async () => (sshd = await LoopbackSshd.start()));
    after(async () => sshd?.stop());

    it("the host's interpreter answers for itself: torch 2 without CUDA, or no torch named with the interpreter", async () => {
      const where = { host: sshd.alias, ssh: { configFile: sshd.clientConfig } };
      const [py, torch] = await pythonChecks(VENV_PYTHON, where, `python: in gpu.fsdp-launch.yaml`);
      assert.equal(py.name, `Python on ${sshd.alias}`);
      assert.ok(py.ok && torch.ok, JSON.stringify([py, torch]));
      assert.match(torch.detail, /^torch 2\.13\.\S+, CUDA not available/);
      const [, missing] = await pythonChecks(bare, where, 'python3 on its PATH');
      assert.equal(missing.ok, false);
      assert.match(missing.detail, /No module named 'torch' — in \S+no-torch\/bin\/python3 \(Python 3\./);
      const unreachable = await probePython('python3', {
        host: 'fsdp-no-such-host',
        ssh: { configFile: sshd.clientConfig, connectTimeoutS: 3 },
      });
      assert.ok(
        'error' in unreachable && /ssh fsdp-no-such-host failed/.test(unreachable.error),
        JSON.stringify(unreachable),
      );
    });
  });
});
