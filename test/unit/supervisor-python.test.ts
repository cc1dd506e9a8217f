// The Python that runs a native run's owner (the companion's supervisor, python/fsdp_studio/
// supervise.py --native) is the host's python3: native runs have no launch spec to name one. It is
// asked its version before anything starts, by the same check a command's launch asks of its
// supervisor's Python (runs/launch/launcher-check.ts): a Python 2 named python3 failed with a raw
// SyntaxError (issue 40 item 6). Real processes: a stand-in Python 2, a Python that hangs,
// launchRun's door and fsdp-train in a terminal.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { launchRun } from '../../runs/launch/launch-run';
import { supervisorPythonProblem } from '../../runs/launch/launcher-check';
import { localLoginHost } from '../../runs/machines/login-host';
import { testLaunchEnvironment } from '../harness/launch-environment';

const root = path.resolve(__dirname, '..', '..');

describe("a native run's supervisor Python is asked its version before the run starts", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-owner-python-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a native run's owner, the python3 on the PATH, is asked the same: older than 3.9 or hanging is refused before anything starts (launchRun and fsdp-train in a terminal)", async function () {
    this.timeout(180_000);
    const py = path.join(dir, 'py');
    mkdirSync(py, { recursive: true });
    const real = execFileSync('/bin/sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();
    // The same stand-in for a Python 2 named python3, first on the PATH as native runs find theirs.
    writeFileSync(
      path.join(py, 'python3'),
      `#!/bin/sh\n[ "$1" = -c ] || exit 2\nexec ${real} -c 'import sys; sys.version_info = (2, 7, 18, "final", 0); exec(sys.argv[1])' "$2"\n`,
    );
    writeFileSync(path.join(py, 'hangs'), '#!/bin/sh\nexec sleep 600\n');
    chmodSync(path.join(py, 'python3'), 0o755);
    chmodSync(path.join(py, 'hangs'), 0o755);
    const refusal =
      "FSDP Studio's supervisor needs Python >= 3.9, found 2.7.18: python3 on this machine (the python3 on the PATH there, which runs every native run's owner). Put a Python 3.9 or newer first on the PATH there as python3.";
    const host = localLoginHost();
    assert.equal(await supervisorPythonProblem(host, 'python3'), undefined, `${real} is Python >= 3.9`);
    assert.equal(
      await supervisorPythonProblem(host, path.join(py, 'hangs'), 1),
      `${path.join(py, 'hangs')} on this machine, the Python that runs FSDP Studio's supervisor, did not say its version within 1 s: it hangs. Put another Python first on the PATH there as python3.`,
    );
    const pathBefore = process.env.PATH;
    process.env.PATH = `${py}:${pathBefore}`;
    try {
      assert.equal(await supervisorPythonProblem(host, 'python3'), refusal);
      // Through the launch door: refused before its strategy (which here would say fsdp-train is missing).
      const native = {
        kind: 'native' as const,
        request: { configPath: path.join(dir, 'r.yaml'), config: { launch: {} } as unknown as ResolvedRunConfig },
      };
      await assert.rejects(launchRun(native, { kind: 'local' }, testLaunchEnvironment({})), { message: refusal });
    } finally {
      process.env.PATH = pathBefore;
    }
    // fsdp-train in a terminal runs itself again under the supervisor: refused, and no run folder made.
    const runDir = path.join(dir, 'terminal-run');
    const cli = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(root, 'cli', 'fsdp-train.ts'),
        path.join(root, 'samples', 'tiny-cpu.yaml'),
        '--run-dir',
        runDir,
      ],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          PATH: `${py}:${process.env.PATH}`,
          // Run from the sources, fsdp-train is told where the built runtime is.
          FSDP_TRAIN_NATIVE: path.join(root, 'native', 'build', 'Release', 'fsdp-train-native'),
        },
        timeout: 150_000,
      },
    );
    assert.equal(cli.status, 1, cli.stderr);
    assert.equal(cli.stderr.trim(), `fsdp-train: ${refusal}`);
    assert.ok(!existsSync(runDir), `the run folder ${runDir} was made`);
  });
});
