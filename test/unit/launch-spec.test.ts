// Launch specs (*.fsdp-launch.yaml) as the language server checks them and the launcher resolves them.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyseConfig } from '../../core/config/config-analysis';
import { recogniseConfig } from '../../core/config/document-kind';
import { loadLaunchSpec } from '../../core/config/launch-spec';

const read = (p: string) => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
};

describe('launch specs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-spec-'));
    writeFileSync(path.join(dir, 'train.py'), 'print(1)\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is recognised by name (*.fsdp-launch.yaml) and by its keys', () => {
    assert.equal(recogniseConfig('/w/ddp.fsdp-launch.yaml', ''), 'launch-spec');
    assert.equal(
      recogniseConfig('/w/x.yaml', 'command: torchrun train.py\nlogs:\n  tensorboard: runs\n'),
      'launch-spec',
    );
    assert.equal(recogniseConfig('/w/compose.yaml', 'services:\n  a:\n    command: x\n'), undefined);
  });

  it('resolves a plain python command with ranks started by FSDP Studio, its folder, env and TensorBoard folder', () => {
    const file = path.join(dir, 'ddp.fsdp-launch.yaml');
    const text =
      'command: python3 train.py --steps 10\nnproc_per_node: 2\nenv: {OMP_NUM_THREADS: 1}\nlogs: {tensorboard: runs}\nconfig: ds_config.json\n';
    const { spec, problems } = loadLaunchSpec(text, file, read);
    assert.deepEqual(
      problems.map((p) => p.code),
      ['launch.config'],
      'only the missing DeepSpeed config',
    );
    assert.equal(spec!.name, 'ddp');
    assert.deepEqual(spec!.command.argv, ['python3', 'train.py', '--steps', '10']);
    assert.equal(spec!.nproc, 2);
    assert.equal(spec!.worldSize, 2);
    assert.equal(spec!.cwd, dir);
    assert.deepEqual(spec!.env, { OMP_NUM_THREADS: '1' });
    assert.equal(spec!.tensorboard, path.join(dir, 'runs'));
    assert.equal(spec!.runsDir, path.join(dir, 'runs'));
    assert.equal(spec!.target, 'local');
  });

  it("takes a person's own metrics pattern, and says where one cannot be read", () => {
    const file = path.join(dir, 'own.fsdp-launch.yaml');
    const good = loadLaunchSpec(
      "command: python3 train.py\nmetrics:\n  pattern: 'ep \\d+ it (?P<step>\\d+) L=(?P<loss>[\\d.]+)'\n",
      file,
      read,
    );
    assert.deepEqual(good.problems, []);
    assert.deepEqual(good.spec!.metricsPatterns, ['ep \\d+ it (?P<step>\\d+) L=(?P<loss>[\\d.]+)']);
    const bad = loadLaunchSpec(
      "command: python3 train.py\nmetrics:\n  pattern: ['loss=(?<loss>[\\d.]+)', '(?<step>\\d+']\n",
      file,
      read,
    );
    assert.deepEqual(
      bad.problems.map((p) => [p.code, p.path.join('.'), p.range.start.line]),
      [
        ['launch.metrics-pattern', 'metrics.pattern.0', 2],
        ['launch.metrics-pattern', 'metrics.pattern.1', 2],
      ],
    );
    assert.match(bad.problems[0].message, /^metrics\.pattern\.0: needs a named group step/);
    assert.match(bad.problems[1].message, /not a valid regular expression/);
  });

  it('torchrun starts its own ranks: nproc_per_node is a warning, its world comes from its options', () => {
    const { spec, problems } = loadLaunchSpec(
      'command: [torchrun, --nproc_per_node, "4", train.py]\nnproc_per_node: 2\n',
      path.join(dir, 't.fsdp-launch.yaml'),
      read,
    );
    assert.deepEqual(
      problems.map((p) => [p.code, p.severity]),
      [['launch.nproc', 'warning']],
    );
    assert.equal(spec!.nproc, 1);
    assert.equal(spec!.worldSize, 4);
  });

  it('says what is wrong, where: shell syntax, a hostile or folder-less host, unknown keys, a missing script', () => {
    const check = (text: string) =>
      analyseConfig('launch-spec', text, path.join(dir, 'x.fsdp-launch.yaml'), {
        settings: { deepspeedLaunchedWith: 'unknown' },
        readFile: read,
      }).problems.map((p) => `${p.range.start.line}:${p.severity}:${p.message}`);
    assert.match(
      check('command: python3 train.py | tee log\n')[0],
      /^0:error:command: "\|" at character 18: a launch spec runs one command without a shell/,
    );
    assert.match(
      check('command: python3 train.py\ntarget: "x;touch p"\n').join('\n'),
      /1:error:target: SSH host "x;touch p" has characters/,
    );
    assert.match(
      check('command: python3 train.py\ntarget: gpu-box\n').join('\n'),
      /1:error:target gpu-box: give cwd, the folder on gpu-box that holds your code/,
    );
    assert.match(
      check('command: python3 train.py\ntarget: gpu-box\ncwd: code\n').join('\n'),
      /2:error:cwd: on gpu-box give an absolute folder/,
    );
    assert.match(check('command: python3 train.py\nlog: {tensorboard: runs}\n').join('\n'), /1:error:.*log/);
    assert.match(check('command: python3 missing.py\n').join('\n'), /0:warning:command: missing\.py is not in \./);
    assert.deepEqual(
      check('command: python3 train.py\ntarget: gpu-box\ncwd: ~/code\n'),
      [],
      'a remote script is not looked for here',
    ); // A SLURM spec's extra #SBATCH lines: one that holds or multiplies the job is an error where it is.
    assert.match(
      check(
        'command: python3 train.py\ntarget: login\ncwd: ~/code\nslurm: {extra_directives: [--exclusive, --array=0-1]}\n',
      ).join('\n'),
      /3:error:"--array=0-1" sets --array: an array's tasks would all run in this one run folder/,
    );
  });
  it('the PyTorch 2 sample (samples/fsdp2-torchrun.fsdp-launch.yaml) loads with no problem: torchrun from .venv, 2 ranks, its script and TensorBoard folder in samples/', () => {
    const samples = path.join(__dirname, '..', '..', 'samples');
    const file = path.join(samples, 'fsdp2-torchrun.fsdp-launch.yaml');
    const { spec, problems } = loadLaunchSpec(readFileSync(file, 'utf8'), file, read);
    assert.deepEqual(problems, []);
    assert.equal(spec!.command.argv[0], '../.venv/bin/torchrun');
    assert.equal(spec!.worldSize, 2);
    assert.equal(spec!.cwd, samples);
    assert.equal(spec!.tensorboard, path.join(samples, 'runs-tb', 'fsdp2'));
    const script = spec!.command.argv.find((a) => a.endsWith('.py'))!;
    assert.ok(readFileSync(path.join(samples, script), 'utf8').includes('fully_shard'), script);
  });
  it('every launch spec in samples/ loads with no problem, and its script is there', () => {
    const samples = path.join(__dirname, '..', '..', 'samples');
    const specs = readdirSync(samples).filter((f) => f.endsWith('.fsdp-launch.yaml'));
    assert.ok(specs.length >= 2, specs.join(', '));
    for (const name of specs) {
      const file = path.join(samples, name);
      const { spec, problems } = loadLaunchSpec(readFileSync(file, 'utf8'), file, read);
      assert.deepEqual(problems, [], name);
      const script = spec!.command.argv.find((a) => a.endsWith('.py'));
      assert.ok(script && existsSync(path.resolve(spec!.cwd, script)), `${name}: ${script}`);
    }
  });
  it('the DDP sample (samples/ddp-python.fsdp-launch.yaml): a plain python command FSDP Studio starts on 2 ranks, a script that logs through the companion', () => {
    const samples = path.join(__dirname, '..', '..', 'samples');
    const file = path.join(samples, 'ddp-python.fsdp-launch.yaml');
    const { spec } = loadLaunchSpec(readFileSync(file, 'utf8'), file, read);
    assert.equal(spec!.command.launcher, 'python');
    assert.equal(spec!.command.argv[0], '../.venv/bin/python');
    assert.deepEqual([spec!.nproc, spec!.worldSize], [2, 2]);
    const script = readFileSync(path.join(samples, 'pytorch', 'ddp_train.py'), 'utf8');
    for (const call of ['DistributedDataParallel', 'fsdp_studio.log(', 'fsdp_studio.watch('])
      assert.ok(script.includes(call), call);
  });
});
