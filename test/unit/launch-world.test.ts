// Before a DeepSpeed or accelerate launch (issue 28, item 4): the ranks a config implies against the
// ranks its command starts, the account of what will run shown for review, and the launcher looked
// for on the host as the command will look for it (a real shell on this machine).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configWorldSize } from '../../core/config/config-world-size';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import { commandForConfig } from '../../core/config/user-command';
import { describeLaunch, launchWorldProblem } from '../../runs/launch/launch-world';
import { launcherProblem } from '../../runs/launch/launcher-check';
import { localLoginHost } from '../../runs/machines/login-host';

const SAMPLES = path.join(__dirname, '..', '..', 'samples');
const read = (p: string) => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
};

describe('launching from a DeepSpeed or accelerate config: world size, review, launcher', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-world-'));
    writeFileSync(path.join(dir, 'train.py'), 'print(1)\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A spec beside a copy of a config, with the command given. */
  function specFor(config: string, configText: string, command: string[], extra = '') {
    writeFileSync(path.join(dir, config), configText);
    const file = path.join(dir, 'x.fsdp-launch.yaml');
    // Loaded without reading files: with them, a mismatch is already a problem of the spec (tested below).
    const { spec, problems } = loadLaunchSpec(`command: ${JSON.stringify(command)}\nconfig: ${config}\n${extra}`, file);
    assert.ok(spec, JSON.stringify(problems));
    return spec;
  }

  it("reads the world size a config implies: DeepSpeed's batch identity, accelerate's num_processes", () => {
    assert.deepEqual(
      configWorldSize('deepspeed', readFileSync(path.join(SAMPLES, 'ds_config.json'), 'utf8'), 'ds_config.json'),
      { size: 4, why: 'train_batch_size 64 ÷ (micro-batch 4 × accumulation 4)' },
    );
    assert.equal(
      configWorldSize('deepspeed', '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8}', 'ds.json')?.size,
      4,
      'accumulation 1 when absent',
    );
    assert.equal(
      configWorldSize('deepspeed', '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 8}', 'ds.json'),
      undefined,
      'not a whole division',
    );
    assert.equal(
      configWorldSize('deepspeed', '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}', 'ds.json'),
      undefined,
    );
    assert.equal(
      configWorldSize('deepspeed', '{"train_batch_size": 64,', 'ds.json'),
      undefined,
      'a syntax error says nothing',
    );
    assert.deepEqual(
      configWorldSize(
        'accelerate',
        readFileSync(path.join(SAMPLES, 'accelerate-fsdp.yaml'), 'utf8'),
        'accelerate-fsdp.yaml',
      ),
      { size: 4, why: 'num_processes 4' },
    );
    assert.equal(
      configWorldSize('accelerate', 'distributed_type: FSDP\nnum_processes: 16\nnum_machines: 2\n', 'a.yaml')?.why,
      'num_processes 16 (across 2 machines)',
    );
  });

  it("refuses a deepspeed command whose ranks differ from the config's, naming both and what to change", () => {
    const ds = readFileSync(path.join(SAMPLES, 'ds_config.json'), 'utf8');
    const wrong = specFor('ds_config.json', ds, commandForConfig('deepspeed', 'ds_config.json', 'train.py', 1));
    assert.equal(
      launchWorldProblem(wrong, read),
      'ds_config.json implies 4 ranks (train_batch_size 64 ÷ (micro-batch 4 × accumulation 4)), but the command starts 1 rank (--num_gpus × --num_nodes): DeepSpeed stops at start-up when train_batch_size ≠ micro-batch × accumulation × ranks. Change --num_gpus in the command, or the batch keys in ds_config.json.',
    );
    assert.equal(
      launchWorldProblem(
        specFor('ds_config.json', ds, commandForConfig('deepspeed', 'ds_config.json', 'train.py', 4)),
        read,
      ),
      undefined,
    );
    assert.equal(
      launchWorldProblem(
        specFor('ds_config.json', ds, [
          'deepspeed',
          '--num_gpus',
          '2',
          '--num_nodes',
          '2',
          'train.py',
          '--deepspeed',
          'ds_config.json',
        ]),
        read,
      ),
      undefined,
      '2 × 2',
    );
    assert.equal(
      launchWorldProblem(
        specFor('ds_config.json', ds, ['deepspeed', 'train.py', '--deepspeed', 'ds_config.json']),
        read,
      ),
      undefined,
      'every GPU of the machine: not known here',
    );
    // The config named by the command's own --deepspeed, without config: in the spec.
    writeFileSync(path.join(dir, 'other.json'), ds);
    const { spec } = loadLaunchSpec(
      'command: deepspeed --num_gpus 8 train.py --deepspeed other.json\n',
      path.join(dir, 'y.fsdp-launch.yaml'),
    );
    assert.match(launchWorldProblem(spec!, read) ?? '', /^other\.json implies 4 ranks .* the command starts 8 ranks/);
  });

  it('says the same as you type the launch spec: an error on the command, or on nproc_per_node for a python command', () => {
    const ds = readFileSync(path.join(SAMPLES, 'ds_config.json'), 'utf8');
    writeFileSync(path.join(dir, 'ds_config.json'), ds);
    const problemsOf = (text: string) =>
      loadLaunchSpec(text, path.join(dir, 'x.fsdp-launch.yaml'), read).problems.filter(
        (p) => p.code === 'launch.world-size',
      );
    const [wrong, ...rest] = problemsOf('command: deepspeed --num_gpus 2 train.py --deepspeed ds_config.json\n');
    assert.equal(rest.length, 0);
    assert.equal(wrong.severity, 'error');
    assert.deepEqual(wrong.path, ['command']);
    assert.match(
      wrong.message,
      /^ds_config\.json implies 4 ranks .* but the command starts 2 ranks \(--num_gpus × --num_nodes\)/,
    );
    assert.deepEqual(problemsOf('command: deepspeed --num_gpus 4 train.py --deepspeed ds_config.json\n'), []);
    // A plain python command with the config named by config: its ranks are nproc_per_node.
    const [python] = problemsOf('command: python train.py\nconfig: ds_config.json\nnproc_per_node: 3\n');
    assert.deepEqual(python.path, ['nproc_per_node']);
    assert.match(python.message, /the command starts 3 ranks: make them agree/);
    // On an SSH host the config is not read here: nothing said.
    assert.deepEqual(
      problemsOf('command: deepspeed --num_gpus 2 train.py --deepspeed ds_config.json\ntarget: gpu-box\ncwd: /work\n'),
      [],
    );
  });

  it("refuses an accelerate command whose --num_processes overrides the config's with another count", () => {
    const acc = readFileSync(path.join(SAMPLES, 'accelerate-fsdp.yaml'), 'utf8');
    assert.equal(
      launchWorldProblem(
        specFor('accelerate-fsdp.yaml', acc, [
          'accelerate',
          'launch',
          '--config_file',
          'accelerate-fsdp.yaml',
          '--num_processes',
          '2',
          'train.py',
        ]),
        read,
      ),
      "accelerate-fsdp.yaml implies 4 ranks (num_processes 4), but the command starts 2 ranks (--num_processes, which overrides the config's): change --num_processes in the command, or num_processes in accelerate-fsdp.yaml.",
    );
    assert.equal(
      launchWorldProblem(
        specFor('accelerate-fsdp.yaml', acc, commandForConfig('accelerate', 'accelerate-fsdp.yaml', 'train.py', 1)),
        read,
      ),
      undefined,
      "the config's own count",
    );
  });

  it("says what will run for review: the command, its ranks, where, and the config's count", () => {
    const ds = readFileSync(path.join(SAMPLES, 'ds_config.json'), 'utf8');
    assert.equal(
      describeLaunch(
        specFor('ds_config.json', ds, commandForConfig('deepspeed', 'ds_config.json', 'train.py', 4)),
        read,
      ),
      'deepspeed --num_gpus 4 train.py --deepspeed ds_config.json — 4 ranks on this machine; ds_config.json implies 4 (train_batch_size 64 ÷ (micro-batch 4 × accumulation 4))',
    );
    assert.equal(
      describeLaunch(
        specFor(
          'ds_config.json',
          ds,
          ['deepspeed', '/code/train.py', '--deepspeed', '/code/ds_config.json'],
          'target: gpu-box\ncwd: /code\n',
        ),
        read,
      ),
      'deepspeed /code/train.py --deepspeed /code/ds_config.json — all GPUs of the host (counted when the ranks report) on gpu-box; ds_config.json implies 4 (train_batch_size 64 ÷ (micro-batch 4 × accumulation 4))',
    );
    const acc = readFileSync(path.join(SAMPLES, 'accelerate-fsdp.yaml'), 'utf8');
    assert.equal(
      describeLaunch(
        specFor('accelerate-fsdp.yaml', acc, commandForConfig('accelerate', 'accelerate-fsdp.yaml', 'train.py', 1)),
        read,
      ),
      "accelerate launch --config_file accelerate-fsdp.yaml train.py — 4 ranks (the config's num_processes 4) on this machine",
    );
  });

  it('looks for the launcher where the command will: on its PATH, or the path it names from its folder', async function () {
    this.timeout(30_000);
    const host = localLoginHost();
    const bin = path.join(dir, 'bin');
    const spec = (command: string[], env: Record<string, string> = {}) => ({
      ...specFor('ds_config.json', '{}', command),
      env,
    });
    const ds = ['deepspeed', '--num_gpus', '1', 'train.py'];
    assert.equal(
      await launcherProblem(host, spec(ds, { PATH: bin })),
      `cannot start deepspeed on this machine: deepspeed is not on the PATH. DeepSpeed installs it (pip install deepspeed, in the Python environment your script uses), or give its full path in the command (e.g. /path/to/venv/bin/deepspeed).`,
    );
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'deepspeed'), '#!/bin/sh\n');
    assert.match(
      (await launcherProblem(host, spec(ds, { PATH: bin }))) ?? '',
      /deepspeed is not on the PATH/,
      'a file that is not executable is not a launcher',
    );
    chmodSync(path.join(bin, 'deepspeed'), 0o755);
    assert.equal(await launcherProblem(host, spec(ds, { PATH: bin })), undefined);
    assert.equal(
      await launcherProblem(host, spec(['bin/deepspeed', 'train.py'])),
      undefined,
      "a path from the command's folder",
    );
    assert.equal(
      await launcherProblem(host, spec(['./venv/bin/accelerate', 'launch', 'train.py'])),
      `cannot start accelerate on this machine: ./venv/bin/accelerate is not an executable file (from ${dir}). Accelerate installs it (pip install accelerate, in the Python environment your script uses), or give its full path in the command (e.g. /path/to/venv/bin/accelerate).`,
    );
    assert.equal(
      await launcherProblem(host, spec(ds), path.join(dir, 'gone')),
      `the command's folder ${path.join(dir, 'gone')} is not on this machine`,
    );
    // Hostile words stay words: nothing runs but the check.
    assert.match((await launcherProblem(host, spec(['$(touch pwned)', 'x']))) ?? '', /is not on the PATH/);
    assert.equal(read(path.join(dir, 'pwned')), undefined);
    // A hostile python: value is quoted whole in the refusal (it read "cannot start py1 #").
    const hostile = 'bin/py1 #$(touch pwned)';
    assert.equal(
      await launcherProblem(host, {
        ...specFor('ds_config.json', '{}', ['python', 'train.py'], `python: ${JSON.stringify(hostile)}\n`),
        env: {},
      }),
      // (resolved from the spec's folder, as the supervisor will run it)
      `cannot start "${dir}/${hostile}" on this machine: "${dir}/${hostile}" is not an executable file (from ${dir}). Install it there, or give its full path in the command.`,
    );
    assert.equal(read(path.join(dir, 'pwned')), undefined);
  });

  it("asks the Python that runs the run's owner for its version: older than 3.9, or one that hangs, is refused saying so", async function () {
    this.timeout(60_000);
    const host = localLoginHost();
    const py = path.join(dir, 'py');
    mkdirSync(py, { recursive: true });
    const real = execFileSync('/bin/sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();
    // Stands in for a Python 2 named python3: the real python3 running the code it is given, with
    // sys.version_info saying 2.7.18 (the check's code is Python 2 and 3 alike).
    writeFileSync(
      path.join(py, 'python3'),
      `#!/bin/sh\n[ "$1" = -c ] || exit 2\nexec ${real} -c 'import sys; sys.version_info = (2, 7, 18, "final", 0); exec(sys.argv[1])' "$2"\n`,
    );
    writeFileSync(path.join(py, 'hangs'), '#!/bin/sh\nexec sleep 600\n');
    chmodSync(path.join(py, 'python3'), 0o755);
    chmodSync(path.join(py, 'hangs'), 0o755);
    const withPython = (python: string) => ({
      ...specFor('ds_config.json', '{}', ['python', 'train.py'], `python: ${python}\n`),
      env: {},
    });
    assert.equal(
      await launcherProblem(host, withPython(path.join(py, 'python3'))),
      `FSDP Studio's supervisor needs Python >= 3.9, found 2.7.18: ${path.join(py, 'python3')} on this machine (chosen by the launch spec). Name a Python 3.9 or newer in the launch spec's python: key.`,
    );
    assert.equal(await launcherProblem(host, withPython(real)), undefined, `${real} is Python >= 3.9`);
    assert.equal(
      await launcherProblem(host, withPython(path.join(py, 'hangs')), undefined, 1),
      `${path.join(py, 'hangs')} on this machine, the Python that runs FSDP Studio's supervisor, did not say its version within 1 s: it hangs. Name another Python in the launch spec's python: key.`,
    );
  });
});
