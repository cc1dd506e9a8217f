// What an SSH host offers the runtime's build, read in one command before building there: its
// GPUs' architectures (nvidia-smi), a CUDA toolkit (nvcc), NVIDIA's pip wheels that PyTorch
// installs (cuBLASLt and NCCL are often only there; found through python3, or the interpreter the
// host's FSDP_PYTHON names), the libraries CMake needs, and the distribution
// (to name the exact package to install). From them: the CMake arguments of the build, and the
// message for a host that lacks a library. scripts/gpu/build.sh does the same on the GPU machine.

/** The probe, run by sh on the host; prints key=value lines. Constant: no user value is in it. */
export const BUILD_FACTS_SCRIPT = [
  'caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null)',
  'echo "gpu_caps=$(echo "$caps" | tr -d " " | tr "\\n" ",")"',
  'nvcc=$(command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })',
  'echo "nvcc=$nvcc"',
  // The interpreter with PyTorch: FSDP_PYTHON where the host sets it (a venv or conda env that a
  // non-interactive ssh session does not activate), else python3.
  'echo "nvidia_wheels=$("${FSDP_PYTHON:-python3}" -c \'import nvidia, os; print(os.path.realpath(list(nvidia.__path__)[0]))\' 2>/dev/null)"',
  // As native/CMakeLists.txt looks for OpenBLAS: its OpenMP build, else pkg-config's openblas.
  'multiarch=$(gcc -dumpmachine 2>/dev/null || c++ -dumpmachine 2>/dev/null)',
  'if test -e "/usr/lib/$multiarch/openblas-openmp/libopenblas.so" || pkg-config --exists openblas 2>/dev/null; then echo blas=yes; else echo blas=no; fi',
  'if test -e /usr/include/nlohmann/json.hpp || pkg-config --exists nlohmann_json 2>/dev/null; then echo json=yes; else echo json=no; fi',
  'if test -e /usr/include/zlib.h || pkg-config --exists zlib 2>/dev/null; then echo zlib=yes; else echo zlib=no; fi',
  'echo "os=$(. /etc/os-release 2>/dev/null; echo "$ID $ID_LIKE")"',
].join('\n');

export interface BuildFacts {
  /** CMake CUDA architectures of the host's GPUs ("90", "80;90"); empty when nvidia-smi named none. */
  gpuArchitectures: string[];
  /** nvcc's path; empty when the host has no CUDA toolkit. */
  nvcc: string;
  /** site-packages/nvidia of the host's python3 (PyTorch's wheels), where cuBLASLt and NCCL may be. */
  nvidiaWheels: string;
  libraries: { blas: boolean; json: boolean; zlib: boolean };
  /** /etc/os-release's ID and ID_LIKE, e.g. "ubuntu debian". */
  os: string;
}

export function parseBuildFacts(stdout: string): BuildFacts {
  const v = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) v.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  // "9.0" -> "90"; anything that is not a compute capability (N/A, errors) is left out.
  const archs = (v.get('gpu_caps') ?? '')
    .split(',')
    .map((c) => /^(\d+)\.(\d+)$/.exec(c.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => `${m[1]}${m[2]}`);
  return {
    gpuArchitectures: [...new Set(archs)].sort(),
    nvcc: v.get('nvcc') ?? '',
    nvidiaWheels: v.get('nvidia_wheels') ?? '',
    libraries: { blas: v.get('blas') === 'yes', json: v.get('json') === 'yes', zlib: v.get('zlib') === 'yes' },
    os: v.get('os') ?? '',
  };
}

/**
 * CMake -D arguments for the host: its GPUs' architectures (else the build's default list), and
 * the wheels' folder to find cuBLASLt and NCCL in when the toolkit lacks them (CMake looks in the
 * toolkit first).
 */
export function cmakeDefinitions(f: BuildFacts): string[] {
  const out: string[] = [];
  if (f.nvcc && f.gpuArchitectures.length) out.push(`-DFSDP_CUDA_ARCHITECTURES=${f.gpuArchitectures.join(';')}`);
  if (f.nvcc && f.nvidiaWheels.startsWith('/')) out.push(`-DFSDP_CUDA_LIBS_ROOT=${f.nvidiaWheels}`);
  return out;
}

type Family = 'debian' | 'fedora' | 'suse' | 'arch' | 'unknown';

function family(os: string): Family {
  const ids = os.toLowerCase().split(/\s+/);
  if (ids.some((i) => ['debian', 'ubuntu'].includes(i))) return 'debian';
  if (ids.some((i) => ['fedora', 'rhel', 'centos', 'rocky', 'almalinux', 'amzn'].includes(i))) return 'fedora';
  if (ids.some((i) => i.includes('suse'))) return 'suse';
  if (ids.some((i) => ['arch', 'manjaro'].includes(i))) return 'arch';
  return 'unknown';
}

const PACKAGES: Record<'blas' | 'json' | 'zlib', Record<Exclude<Family, 'unknown'>, string> & { what: string }> = {
  blas: {
    what: 'OpenBLAS (the CPU backend, built with every runtime)',
    debian: 'libopenblas-dev',
    fedora: 'openblas-devel',
    suse: 'openblas-devel',
    arch: 'openblas',
  },
  json: {
    what: 'nlohmann/json',
    debian: 'nlohmann-json3-dev',
    fedora: 'json-devel',
    suse: 'nlohmann_json-devel',
    arch: 'nlohmann-json',
  },
  zlib: { what: 'zlib', debian: 'zlib1g-dev', fedora: 'zlib-devel', suse: 'zlib-devel', arch: 'zlib' },
};

const INSTALL: Record<Exclude<Family, 'unknown'>, string> = {
  debian: 'sudo apt-get install',
  fedora: 'sudo dnf install',
  suse: 'sudo zypper install',
  arch: 'sudo pacman -S',
};

/** What the host lacks for the build, with the exact command that installs it there; undefined when nothing is missing. */
export function missingLibrariesMessage(host: string, f: BuildFacts): string | undefined {
  const missing = (['blas', 'json', 'zlib'] as const).filter((k) => !f.libraries[k]);
  if (!missing.length) return undefined;
  const fam = family(f.os);
  const what = missing.map((k) => PACKAGES[k].what).join(', ');
  const gpu = f.gpuArchitectures.length
    ? ' (a CUDA runtime is built with the CPU backend beside it, so a GPU host needs them too)'
    : '';
  if (fam === 'unknown') {
    return `${host} lacks ${what}, needed to build the runtime there${gpu}. Install their development packages (OpenBLAS's openblas.pc for pkg-config, nlohmann/json.hpp, zlib.h), then launch again.`;
  }
  const pkgs = missing.map((k) => PACKAGES[k][fam]).join(' ');
  return `${host} lacks ${what}, needed to build the runtime there${gpu}. Install with: ${INSTALL[fam]} ${pkgs}`;
}

/**
 * The backend a finished build has, from the lines CMake printed while configuring it
 * (native/cmake/cuda.cmake): "CUDA backend for sm_90 (cuBLASLt …; NCCL …)" or "CPU backend only (…)".
 */
export function describeBuiltBackend(configureLog: string, f: BuildFacts): string {
  const built = /CUDA backend: cuBLASLt (\S+); NCCL (ON|OFF) ?(\S*); architectures (\S+)/.exec(configureLog);
  if (built) {
    const archs = built[4]
      .split(';')
      .map((a) => `sm_${a}`)
      .join(', ');
    return `CUDA backend for ${archs} (cuBLASLt ${built[1]}; ${built[2] === 'ON' ? `NCCL ${built[3]}` : 'no NCCL: several GPUs communicate through MPI and pinned host memory'})`;
  }
  const notBuilt = /CUDA backend: not built \(([^)]*)\)/.exec(configureLog);
  if (notBuilt) return `CPU backend only: ${notBuilt[1]}`;
  if (f.gpuArchitectures.length && !f.nvcc)
    return 'CPU backend only: the host has GPUs but no CUDA toolkit (nvcc); install it to build the CUDA backend';
  return 'CPU backend only (no CUDA toolkit on the host)';
}
