// The runtime on an SSH host, against a real sshd on 127.0.0.1: first use copies the native
// sources and builds them there with the host's CMake and compiler, for the architecture its
// nvidia-smi names, and says which backend it built; the second finds the build by its content
// hash; data files travel once; a host without the build tools, or without OpenBLAS, gets a
// message that names the packages to install; a GPU host whose toolkit lacks cuBLASLt and NCCL
// builds with them from its PyTorch wheels (the CMake command checked through a recording cmake).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RemoteRuntimeInstaller, sourceHash } from '../../runs/runtime/remote-runtime';
import { repoRoot } from '../../scripts/code-server';
import { recordDuration } from '../harness/durations';
import { LoopbackSshd, SHARED_REMOTE_BASE } from '../harness/sshd';

/** A folder of host tools: the real ones named, linked, and scripts standing in for others. */
function hostTools(real: string[], scripts: Record<string, string>): string {
  const bin = mkdtempSync(path.join(os.tmpdir(), 'fsdp-host-tools-'));
  for (const tool of real) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found.startsWith('/')) symlinkSync(found, path.join(bin, tool));
  }
  for (const [name, body] of Object.entries(scripts)) {
    writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(bin, name), 0o755);
  }
  return bin;
}

/** Compilations ccache could not serve, from the stats log it wrote (`ccache --show-log-stats`). */
function compilerMisses(statsLog: string): number {
  assert.ok(existsSync(statsLog), `ccache wrote no stats log (${statsLog}): did the build use ccache?`);
  const r = spawnSync('ccache', ['--show-log-stats', '-v'], {
    encoding: 'utf8',
    env: { ...process.env, CCACHE_STATSLOG: statsLog },
  });
  const misses = /^\s*Misses:\s*(\d+)/m.exec(r.stdout);
  assert.ok(r.status === 0 && misses, `ccache --show-log-stats: ${r.stdout}${r.stderr}`);
  return Number(misses[1]);
}

/** What a remote command sees as the host's GPU: an H100's compute capability. */
const NVIDIA_SMI = 'case "$*" in *compute_cap*) echo 8.6;; *) exit 9;; esac';

describe('the runtime on an SSH host (real sshd on 127.0.0.1)', function () {
  this.timeout(15 * 60_000);
  let sshd: LoopbackSshd;
  let base: string;
  let gpuTools: string;
  const log: string[] = [];

  // ccache's record of each compilation the host's build makes (its own file: other builds share
  // the cache's counters).
  const compilerStats = path.join(os.tmpdir(), `fsdp-host-ccache-${process.pid}.log`);

  before(async () => {
    // The host reports a GPU (a stand-in nvidia-smi ahead of its own tools): the build targets it.
    gpuTools = hostTools([], { 'nvidia-smi': NVIDIA_SMI });
    rmSync(compilerStats, { force: true });
    sshd = await LoopbackSshd.start({
      setEnv: { PATH: `${gpuTools}:${process.env.PATH}`, CCACHE_STATSLOG: compilerStats },
    });
    base = SHARED_REMOTE_BASE;
    // First use: no runtime of these sources on the host yet (the launch tests reuse this build).
    rmSync(path.join(base, 'runtime'), { recursive: true, force: true });
    rmSync(path.join(base, 'data'), { recursive: true, force: true });
  });
  after(async () => {
    await sshd?.stop();
    rmSync(compilerStats, { force: true });
    if (gpuTools) rmSync(gpuTools, { recursive: true, force: true });
  });

  it('builds the runtime on first use with the host tools, for its GPU, says which backend it built, then finds it by content hash', async () => {
    const installer = new RemoteRuntimeInstaller(sshd.alias, () => ({ configFile: sshd.clientConfig }), repoRoot);
    const first = await installer.ensure(base, (m) => log.push(m));
    assert.equal(first.built, true);
    assert.ok(first.binary.includes(`/runtime/${sourceHash(repoRoot).slice(0, 16)}/`), first.binary);
    assert.ok(
      log.some((m) => /building the runtime .* for its GPUs \(sm_86\)/.test(m)),
      log.join('\n'),
    );
    // This machine has nvcc but no cuBLASLt: the CPU backend, and the launch output says why.
    const nvcc =
      spawnSync('sh', ['-c', 'command -v nvcc || test -x /usr/local/cuda/bin/nvcc'], { encoding: 'utf8' }).status === 0;
    assert.ok(log.includes(`built the runtime on ${sshd.alias}: ${first.backend}`), log.join('\n'));
    assert.match(first.backend, nvcc ? /^CPU backend only: cuBLASLt not found/ : /^CPU backend only/);
    const buildDir = path.join(path.dirname(path.dirname(first.binary)));
    if (nvcc) {
      const report = JSON.parse(readFileSync(path.join(buildDir, 'cuda-check', 'report.json'), 'utf8')) as {
        architectures: string[];
      };
      assert.deepEqual(report.architectures, ['86'], "the kernels are configured for the host GPU's architecture");
    }
    // The suite's one from-nothing build is the .vsix's first launch (install-vsix.test.ts); this one
    // takes every object from the set-up's compiler cache. In a fresh clone (CI) the set-up compiled
    // every source, so a miss means the two builds' compilations differ (a flag, the locale: see
    // compiler-cache.ts); in a working tree, objects built outside the set-up may be missing.
    const misses = compilerMisses(compilerStats);
    if (process.env.CI)
      assert.equal(misses, 0, `the host's build compiled ${misses} objects the set-up's cache lacked`);
    else if (misses > 0) console.log(`      (the host's build compiled ${misses} objects the set-up's cache lacked)`);
    const version = JSON.parse(sshd.exec(`'${first.binary}' --version`)) as { capabilities: string[] };
    assert.ok(version.capabilities.includes('probe'));
    // "Not rebuilt" is the binary's identity (inode, size, modification time) unchanged, not how
    // quickly the second call came back; that duration goes to the benchmark.
    const identity = (file: string) => {
      const st = statSync(file);
      return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
    };
    const before = identity(first.binary);
    const t0 = Date.now();
    const second = await installer.ensure(base, (m) => log.push(`second: ${m}`));
    recordDuration('remote-runtime: the cached runtime found by content hash', t0);
    assert.deepEqual(second, { binary: first.binary, built: false, backend: first.backend });
    assert.deepEqual(identity(first.binary), before, 'the cached runtime was not rebuilt');
    assert.ok(!log.some((m) => m.startsWith('second:')), 'nothing copied or built the second time');
  });

  it('copies a data file once, by content, and keeps its bytes', async () => {
    const installer = new RemoteRuntimeInstaller(sshd.alias, () => ({ configFile: sshd.clientConfig }), repoRoot);
    const local = path.join(repoRoot, 'samples', 'data', 'fortunes-byte-val.tok');
    const copied: string[] = [];
    const remote = await installer.ensureFile(base, local, (m) => copied.push(m));
    assert.deepEqual(readFileSync(remote), readFileSync(local));
    assert.equal(copied.length, 1);
    assert.equal(await installer.ensureFile(base, local, (m) => copied.push(m)), remote);
    assert.equal(copied.length, 1, 'the second time nothing is copied');
  });

  it('says which tools a host lacks and how to install them', async () => {
    // A host whose PATH has a shell and tail but no compiler, CMake or make.
    const bin = mkdtempSync(path.join(os.tmpdir(), 'fsdp-poor-host-'));
    for (const tool of ['sh', 'tail', 'tar', 'setsid', 'mkdir', 'rm', 'test']) {
      const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      if (found.startsWith('/')) symlinkSync(found, path.join(bin, tool));
    }
    const poor = await LoopbackSshd.start({ alias: 'poor-host', setEnv: { PATH: bin } });
    try {
      const sources = mkdtempSync(path.join(os.tmpdir(), 'fsdp-src-'));
      mkdirSync(path.join(sources, 'native'));
      mkdirSync(path.join(sources, 'core', 'schemas'), { recursive: true });
      writeFileSync(path.join(sources, 'native', 'CMakeLists.txt'), 'project(x)\n');
      const installer = new RemoteRuntimeInstaller(poor.alias, () => ({ configFile: poor.clientConfig }), sources);
      await assert.rejects(
        installer.ensure(base, () => undefined),
        /poor-host lacks cmake, c\+\+, make, pkg-config.*apt-get install cmake g\+\+ make pkg-config/,
      );
      rmSync(sources, { recursive: true, force: true });
    } finally {
      await poor.stop();
      rmSync(bin, { recursive: true, force: true });
    }
  });
  it("builds a GPU host's runtime for its architecture with cuBLASLt and NCCL from its PyTorch wheels, and says so", async () => {
    // A recording cmake stands in for the host's (configuring prints what cuda.cmake prints when it
    // finds both libraries in the wheels; building makes the binary); the host's FSDP_PYTHON names
    // an interpreter that reports PyTorch's wheels.
    const wheels = '/opt/py/site-packages/nvidia';
    const tools = hostTools(
      [
        'sh',
        'tail',
        'tar',
        'setsid',
        'mkdir',
        'rm',
        'test',
        'cat',
        'mv',
        'grep',
        'make',
        'nproc',
        'c++',
        'gcc',
        'pkg-config',
        'dirname',
        'chmod',
        'tr',
        'touch',
      ],
      {
        'nvidia-smi': 'case "$*" in *compute_cap*) printf "9.0\\n9.0\\n";; *) exit 9;; esac',
        nvcc: 'echo "Cuda compilation tools, release 13.0"',
        'torch-python': `echo ${wheels}`,
        cmake: [
          'if [ "$1" = "-S" ]; then',
          '  mkdir -p "$4" && printf "%s\\n" "$@" > "$4/cmake-args.txt"',
          `  echo "-- CUDA backend: cuBLASLt ${wheels}/cublas/lib/libcublasLt.so.13; NCCL ON ${wheels}/nccl/lib/libnccl.so.2; architectures 90"`,
          'elif [ "$1" = "--build" ]; then',
          '  mkdir -p "$2/Release" && printf "#!/bin/sh\\necho built\\n" > "$2/Release/fsdp-train-native" && chmod +x "$2/Release/fsdp-train-native"',
          'fi',
        ].join('\n'),
      },
    );
    const gpuHost = await LoopbackSshd.start({
      alias: 'gpu-host',
      setEnv: { PATH: tools, FSDP_PYTHON: path.join(tools, 'torch-python') },
    });
    const gpuBase = mkdtempSync(path.join(os.tmpdir(), 'fsdp-gpu-host-'));
    try {
      const messages: string[] = [];
      const installer = new RemoteRuntimeInstaller(
        gpuHost.alias,
        () => ({ configFile: gpuHost.clientConfig }),
        repoRoot,
      );
      const r = await installer.ensure(gpuBase, (m) => messages.push(m));
      assert.equal(
        r.backend,
        `CUDA backend for sm_90 (cuBLASLt ${wheels}/cublas/lib/libcublasLt.so.13; NCCL ${wheels}/nccl/lib/libnccl.so.2)`,
      );
      assert.ok(messages.includes(`built the runtime on gpu-host: ${r.backend}`), messages.join('\n'));
      const args = readFileSync(path.join(path.dirname(path.dirname(r.binary)), 'cmake-args.txt'), 'utf8').split('\n');
      assert.ok(args.includes('-DFSDP_CUDA_ARCHITECTURES=90'), args.join(' '));
      assert.ok(args.includes(`-DFSDP_CUDA_LIBS_ROOT=${wheels}`), args.join(' '));
      assert.ok(args.includes('-DCMAKE_BUILD_TYPE=Release'));
      // Found again with what it built, without building.
      const again = await installer.ensure(gpuBase, (m) => messages.push(`again: ${m}`));
      assert.deepEqual(again, { binary: r.binary, built: false, backend: r.backend });
      assert.ok(!messages.some((m) => m.startsWith('again:')));
    } finally {
      await gpuHost.stop();
      rmSync(gpuBase, { recursive: true, force: true });
      rmSync(tools, { recursive: true, force: true });
    }
  });

  it('tells a GPU host without OpenBLAS exactly which package to install, before copying anything', async () => {
    // pkg-config knows no openblas, and the compiler names no multiarch folder with OpenBLAS's OpenMP build.
    const tools = hostTools(['sh', 'tail', 'tar', 'setsid', 'mkdir', 'rm', 'test', 'cat', 'make', 'tr'], {
      'nvidia-smi': 'case "$*" in *compute_cap*) echo 9.0;; *) exit 9;; esac',
      'c++': 'echo none',
      cmake: 'exit 0',
      'pkg-config': 'case "$*" in *nlohmann_json*|*zlib*) exit 0;; *) exit 1;; esac',
    });
    const host = await LoopbackSshd.start({ alias: 'no-blas-host', setEnv: { PATH: tools } });
    const hostBase = mkdtempSync(path.join(os.tmpdir(), 'fsdp-no-blas-'));
    try {
      const installer = new RemoteRuntimeInstaller(host.alias, () => ({ configFile: host.clientConfig }), repoRoot);
      const debian = existsSync('/etc/debian_version');
      await assert.rejects(
        installer.ensure(hostBase, () => undefined),
        debian
          ? /no-blas-host lacks OpenBLAS .*a GPU host needs them too.*Install with: sudo apt-get install libopenblas-dev$/
          : /no-blas-host lacks OpenBLAS/,
      );
      assert.ok(!existsSync(path.join(hostBase, 'runtime')), 'nothing was copied');
    } finally {
      await host.stop();
      rmSync(hostBase, { recursive: true, force: true });
      rmSync(tools, { recursive: true, force: true });
    }
  });
});
