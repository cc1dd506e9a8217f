import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveRunConfig, type ResolvedRunConfig } from '../../core/config/run-config';
import { detachedStartArgv, manifestEnv } from '../../runs/machines/detached-start';
import { COMPANION_DIR, supervisorPath } from '../../runs/runtime/remote-companion';
import { gracefulStopSignal } from '../../runs/launch/mpirun';
import { newRunId } from '../../runs/folder/run-folder';
import { withMpirun } from '../../runs/launch/launcher';
import { RunRegistry } from '../../runs/watch/run-registry';
import { sshArgv } from '../../runs/machines/ssh';
import { sshConfigHosts } from '../../runs/machines/ssh-hosts';

const repoRoot = path.resolve(__dirname, '../..');

function config(launch: object): ResolvedRunConfig {
  return resolveRunConfig(
    {
      model: { d_model: 8, n_layers: 1, n_heads: 1, vocab_size: 256, max_seq_len: 8 },
      data: { train: 'x.tok' },
      training: { batch_size_per_gpu: 1, max_steps: 1 },
      launch,
    } as never,
    '/tmp',
  );
}

describe('launch plan', () => {
  it('names runs by config and time, safe as a folder name', () => {
    const id = newRunId('my run; $(x)', new Date('2026-11-21T15:30:12Z'));
    assert.match(id, /^my-run-x-20261121-153012-[0-9a-f]{4}$/);
    assert.match(newRunId(undefined), /^run-\d{8}-\d{6}-/);
  });

  it('starts the runtime on a host through mpirun only for several processes, unbound, passing the named environment', () => {
    assert.deepEqual(withMpirun(config({ nproc_per_node: 1 }), ['t']), ['t']);
    const argv = withMpirun(config({ nproc_per_node: 4 }), ['t', 'a b'], ['OMP_WAIT_POLICY']);
    assert.deepEqual(argv.slice(0, 4), ['mpirun', '-n', '4', '--oversubscribe']);
    assert.ok(argv.join(' ').includes('--bind-to none'), argv.join(' '));
    assert.ok(argv.join(' ').includes('-x OMP_WAIT_POLICY'), argv.join(' '));
    assert.deepEqual(argv.slice(-2), ['t', 'a b']);
    assert.deepEqual(withMpirun(config({ nproc_per_node: 2, nnodes: 3 }), ['t']).slice(0, 5), [
      'mpirun',
      '-n',
      '6',
      '--map-by',
      'ppr:2:node',
    ]);
  });

  it('stops a run led by mpirun with SIGUSR1 (forwarded to the ranks, not an abort), any other with SIGTERM', () => {
    assert.equal(gracefulStopSignal(['mpirun', '-n', '2', 'fsdp-train-native']), 'SIGUSR1');
    assert.equal(gracefulStopSignal(['/usr/bin/node', 'dist/cli/fsdp-train.js', 'c.yaml']), 'SIGTERM');
    assert.equal(gracefulStopSignal(undefined), 'SIGTERM');
    // Under the supervisor (the run's owner): what it runs counts; a person's command never gets SIGUSR1.
    const supervisor = ['python3', '/c/fsdp_studio/supervise.py', '--run-dir', '/r'];
    assert.equal(gracefulStopSignal([...supervisor, '--native', '--', 'mpirun', '-n', '2', 'x']), 'SIGUSR1');
    assert.equal(gracefulStopSignal([...supervisor, '--native', '--', '/usr/bin/node', 'fsdp-train.js']), 'SIGTERM');
    assert.equal(gracefulStopSignal([...supervisor, '--', 'mpirun', '-n', '2', 'python3', 'train.py']), 'SIGTERM');
  });

  it('the detached start marks the run and execs its owner, which writes run.json with its own pid, group and start', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-start-'));
    try {
      const manifest = {
        v: 1 as const,
        run_id: 'r',
        created: 1,
        status: 'starting' as const,
        config: { note: `it's "quoted" $(x) %s \\n` },
        world: { size: 1 },
        host: 'h',
        pids: [1234],
      };
      // The supervisor's child prints its parent (the supervisor: the start script's pid, exec'd),
      // the run's mark, when its parent started, and whether the manifest reached it (it must not).
      const argv = detachedStartArgv('r', [
        'python3',
        supervisorPath(path.join(repoRoot, COMPANION_DIR)),
        '--run-dir',
        dir,
        '--',
        '/bin/sh',
        '-c',
        'echo "$PPID $FSDP_RUN_ID $(cut -d" " -f22 /proc/$PPID/stat) ${FSDP_RUN_MANIFEST:-none} $1"',
        'sh',
        'a b;c',
      ]);
      const child = spawn(argv[0], argv.slice(1), {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...manifestEnv(manifest) },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (err += b.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      assert.equal(code, 0, err);
      const [pid, mark, ticks, inherited, arg] = out.trim().split(' ');
      const written = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8'));
      assert.equal(Number(pid), child.pid, 'the exec keeps the pid of the detached start');
      assert.equal(written.pids[0], child.pid, 'run.json names the owner first, not the pids the launcher passed');
      assert.equal(written.pgid, child.pid, "the owner leads the run's process group");
      assert.equal(written.leader_start, Number(ticks), 'run.json records when the process it names started');
      assert.equal(written.boot_id, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
      assert.equal(mark, 'r', 'the run id marks its processes (FSDP_RUN_ID)');
      assert.equal(inherited, 'none', "the starting manifest is not passed on to the run's processes");
      assert.deepEqual(written.config, manifest.config);
      assert.equal(written.status, 'completed');
      assert.equal(arg, 'a');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes ssh options, then --, then the host, then one quoted remote command', () => {
    const argv = sshArgv('gpu-box', ['tail', '-c', '+1', { path: '~/runs/a b/metrics.jsonl' }], {
      configFile: '/x/ssh config',
    });
    assert.deepEqual(argv.slice(0, 2), ['-F', '/x/ssh config']);
    assert.equal(argv.at(-3), '--');
    assert.equal(argv.at(-2), 'gpu-box');
    assert.equal(argv.at(-1), `tail -c +1 "$HOME"/'runs/a b/metrics.jsonl'`);
    assert.throws(() => sshArgv('-oProxyCommand=x', ['true'], {}), /starts with "-"/);
  });

  it('lists concrete hosts of an ssh config, following Include, skipping patterns', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-sshcfg-'));
    try {
      const inc = path.join(dir, 'more');
      writeFileSync(inc, 'Host extra-box\n  HostName 10.0.0.2\n');
      writeFileSync(
        path.join(dir, 'config'),
        `Host gpu-a gpu-b *.corp !bad\n  User me\nInclude ${inc}\nHost=tight\nMatch host x\n`,
      );
      assert.deepEqual(sshConfigHosts(path.join(dir, 'config')), ['gpu-a', 'gpu-b', 'extra-box', 'tight']);
      assert.deepEqual(sshConfigHosts(path.join(dir, 'absent')), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the runs registry on disk across instances and replaces records by run', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-reg-'));
    try {
      const file = path.join(dir, 'sub', 'runs.json');
      const a = new RunRegistry(file);
      const key = a.put({ target: 'gpu-box', runDir: '/r/1', runId: '1', launchedAt: 5 });
      a.put({ target: 'local', runDir: '/r/2', runId: '2' });
      a.put({ target: 'gpu-box', runDir: '/r/1', runId: '1', pgid: 77 });
      const b = new RunRegistry(file);
      assert.deepEqual(b.get(key), { target: 'gpu-box', runDir: '/r/1', runId: '1', launchedAt: 5, pgid: 77 });
      b.remove(key);
      assert.deepEqual(
        new RunRegistry(file).list().map((r) => r.runId),
        ['2'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
