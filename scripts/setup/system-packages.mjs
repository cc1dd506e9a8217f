// Debian packages the project needs, by purpose. Installed with apt-get only when missing, so a
// second run costs one dpkg-query. Uses only Node built-ins: it runs before `npm install`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PACKAGES = {
  // The native runtime: compiler, CMake, BLAS, OpenMP (from g++), MPI, JSON, zlib, GoogleTest.
  // OpenBLAS's OpenMP build shares the runtime's OpenMP threads instead of starting its own
  // pool, which on few cores competes with the OpenMP kernels (native/CMakeLists.txt).
  build: [
    'g++',
    'cmake',
    'make',
    'pkg-config',
    'libopenblas-dev',
    'libopenblas-openmp-dev',
    'zlib1g-dev',
    'nlohmann-json3-dev',
    'openmpi-bin',
    'libopenmpi-dev',
    'libgtest-dev',
    // oneDNN: the CPU backend's bf16 matrix products (mixed_precision on launch.device: cpu; AMX
    // tiles where the CPU has them). Optional to the build, which refuses bf16 on the CPU without it.
    'libdnnl-dev',
    // A compiler cache: the tests build the runtime's sources again on the loopback SSH host, and
    // take the set-up's objects from it instead of compiling them twice (native/CMakeLists.txt).
    'ccache',
  ],
  // The sample corpus: Debian's fortunes, about 2.5 MB of English text.
  data: ['fortunes'],
  // code-server (the VS Code that npm start opens where `code` is absent, and that e2e tests drive).
  codeServer: ['libkrb5-dev', 'ripgrep'],
  // End-to-end and SSH tests: a real browser and a real sshd on loopback; a real one-node SLURM
  // cluster (slurmctld + slurmd + munge, started by the test harness) for cluster launches; network
  // namespaces (iproute2) as separate hosts for runs across hosts. Users' own PyTorch training
  // scripts run for real on the CPU with PyTorch 2 from the project's .venv
  // (scripts/setup/python-env.mjs), which Debian's python3 makes only with python3-venv (ensurepip).
  test: ['chromium', 'openssh-server', 'openssh-client', 'procps', 'slurm-wlm', 'munge', 'iproute2', 'python3-venv'],
  // The one formatting of the native runtime's C++ (.clang-format), checked by the tests.
  format: ['clang-format'],
};

/** Installs the packages of the given purposes that are not installed yet. */
export function ensureSystemPackages(purposes, log = console.log) {
  const wanted = [...new Set(purposes.flatMap((p) => PACKAGES[p]))];
  const missing = wanted.filter((pkg) => !isInstalled(pkg));
  if (missing.length === 0) return;
  if (!existsSync('/usr/bin/apt-get')) {
    throw new Error(
      `missing system packages: ${missing.join(' ')}. This machine has no apt-get; install their equivalents and run again.`,
    );
  }
  const asRoot = process.getuid?.() === 0;
  if (!asRoot && spawnSync('sudo', ['-n', 'true']).status !== 0) {
    throw new Error(
      `missing system packages: ${missing.join(' ')}. Install them with:\n  sudo apt-get install -y ${missing.join(' ')}\nand run again.`,
    );
  }
  const sudo = asRoot ? [] : ['sudo', '-n'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  log(`installing Debian packages: ${missing.join(' ')}`);
  run([...sudo, 'apt-get', 'update', '-qq'], env);
  run([...sudo, 'apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...missing], env);
}

function isInstalled(pkg) {
  try {
    const status = execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return status.includes('install ok installed');
  } catch {
    return false;
  }
}

function run(argv, env) {
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'], env });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed with exit code ${r.status}`);
}
