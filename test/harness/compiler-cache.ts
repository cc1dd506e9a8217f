// The compiler cache the set-up's native build fills (native/build/ccache: scripts/setup/native.mjs's
// COMPILER_CACHE_DIR, read by ccache through native/CMakeLists.txt), for builds of the same sources
// that tests make elsewhere: the runtime built on the loopback SSH host compiles nothing the set-up
// compiled already, instead of repeating a full build (about 3 minutes on 2 cores). ccache keys an
// object by its preprocessed source and flags, so what changed is still compiled.
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';

export const COMPILER_CACHE_DIR = path.join(repoRoot, 'native', 'build', 'ccache');

/**
 * ccache's environment for a build whose sources and build folder are under `baseDir`: paths there
 * are hashed relative to the build folder, so a copy of native/ built in native-copy/build matches
 * the set-up's native/ built in native/build (system headers outside it stay absolute, as they must).
 */
export function compilerCacheEnvironment(baseDir: string = os.tmpdir()): Record<string, string> {
  return { CCACHE_DIR: COMPILER_CACHE_DIR, CCACHE_BASEDIR: baseDir, ...localeEnvironment() };
}

/**
 * The locale variables ccache hashes with every object (they change the compiler's messages), as
 * this process has them: the set-up built with them, and a remote session without them (sshd gives
 * it none unless the client sends them, as Debian's ssh_config does with `SendEnv LANG LC_*`) missed
 * every object — the SSH host's first use compiled all 87 in a fresh clone (ccache's debug input:
 * `### LANG C.UTF-8` was the one difference).
 */
function localeEnvironment(): Record<string, string> {
  const names = ['LANG', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES'];
  return Object.fromEntries(names.flatMap((n) => (process.env[n] ? [[n, process.env[n]!]] : [])));
}
