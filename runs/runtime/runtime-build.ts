// Building the native runtime where it runs — on an SSH host (remote-runtime.ts) or on this
// machine for an installed extension (local-runtime.ts) — the same way: the sources the build
// reads, their content hash (a build folder is named by it, so a second use finds it), the tools
// and Debian packages it needs, the CMake steps, and a message naming the packages a failed
// build lacks (what a probe of the machine cannot tell: remote-build-facts.ts probes the libraries).
// No vscode here: tested directly.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * What the runtime's CMake build reads, relative to the extension root: the native sources and
 * the config schema it embeds (native/CMakeLists.txt reads ../core/schemas). build/ is not read.
 */
export const RUNTIME_SOURCES = ['native', 'core/schemas'];

/** Tools the build needs, with the Debian package that has each. */
export const BUILD_TOOLS: Array<[tool: string, pkg: string]> = [
  ['cmake', 'cmake'],
  ['c++', 'g++'],
  ['make', 'make'],
  ['pkg-config', 'pkg-config'],
];

/** Libraries the build looks for; named in the message when the configure step fails. */
export const LIBRARY_PACKAGES =
  'libopenblas-dev nlohmann-json3-dev zlib1g-dev (and openmpi-bin libopenmpi-dev for several processes)';

/** What CMake says when a library is missing, and the Debian package that has it. */
const CMAKE_COMPLAINTS: Array<[RegExp, string]> = [
  [/No CMAKE_CXX_COMPILER could be found|CMAKE_CXX_COMPILER.*not a full path to an existing compiler/i, 'g++'],
  [/Could NOT find OpenMP/i, 'libomp-dev'],
  [/Could NOT find ZLIB/i, 'zlib1g-dev'],
  [/provided by "nlohmann_json"|nlohmann\/json\.hpp: No such file/i, 'nlohmann-json3-dev'],
  [/Could NOT find PkgConfig/i, 'pkg-config'],
  [/Package '[^']*openblas[^']*'.*not found|cblas\.h: No such file/i, 'libopenblas-dev'],
  [/CMake \d+\.\d+ or higher is required/i, 'cmake (3.18 or newer)'],
];

/** The Debian packages a failed configure or build lacks, from what CMake and the compiler said. */
export function missingPackages(log: string): string[] {
  return [...new Set(CMAKE_COMPLAINTS.filter(([re]) => re.test(log)).map(([, pkg]) => pkg))];
}

/** Why a build failed, for a person: the packages it lacks when that is the reason, and the log's end. */
export function buildFailureMessage(where: string, log: string): string {
  const missing = missingPackages(log);
  const lacks = missing.length
    ? `it lacks ${missing.join(', ')} (on Debian or Ubuntu: sudo apt-get install ${missing.map((p) => p.split(' ')[0]).join(' ')})`
    : `it needs a C++17 compiler, CMake ≥ 3.18 and the libraries ${LIBRARY_PACKAGES}`;
  const tail = log.trim().split('\n').slice(-25).join('\n');
  return `building the native runtime ${where} failed: ${lacks}. The build said:\n${tail}`;
}

/** The message for tools missing before a build: which, and the packages that have them. */
export function missingToolsMessage(
  where: string,
  missing: string[],
  tools: Array<[string, string]> = BUILD_TOOLS,
): string {
  const pkgs = tools.filter(([t]) => missing.includes(t)).map(([, p]) => p);
  return `${where} lacks ${missing.join(', ')}, needed to build the native runtime. On Debian or Ubuntu: sudo apt-get install ${[...new Set(pkgs)].join(' ')} ${LIBRARY_PACKAGES.split(' (')[0]}`;
}

/**
 * The two CMake commands (configure, build) that build `targets` from `sourceDir` (the native
 * folder) into `buildDir`, outputs in `buildDir/Release`; `defines` are extra -DNAME=VALUE arguments.
 */
export function cmakeSteps(
  sourceDir: string,
  buildDir: string,
  targets: string[],
  jobs: number,
  defines: string[] = [],
): string[][] {
  return [
    ['cmake', '-S', sourceDir, '-B', buildDir, '-DCMAKE_BUILD_TYPE=Release', ...defines],
    ['cmake', '--build', buildDir, ...targets.flatMap((t) => ['--target', t]), '--parallel', String(jobs)],
  ];
}

/** Content hash of the runtime's sources (RUNTIME_SOURCES under `root`, without native/build). */
export function sourceHash(root: string): string {
  const h = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (name === 'build' && dir === path.join(root, 'native')) continue;
      if (statSync(p).isDirectory()) walk(p);
      else h.update(path.relative(root, p)).update('\0').update(readFileSync(p));
    }
  };
  for (const folder of RUNTIME_SOURCES) walk(path.join(root, folder));
  return h.digest('hex');
}
