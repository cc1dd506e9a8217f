// Builds the native runtime (library, CLI and Node addon) with cmake-js. This is the package's
// `install` script, so `npm install` builds it; it is also called by the setup of npm start/test.
// Skips the build when the sources have not changed since the last successful one.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSystemPackages } from './system-packages.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const nativeDir = path.join(root, 'native');
const buildDir = path.join(nativeDir, 'build');
const stampFile = path.join(buildDir, 'source-hash');

/**
 * The compiler cache (ccache, wired in native/CMakeLists.txt) of this checkout: the set-up's build
 * fills it, and the tests' builds of the same sources elsewhere (the runtime built on the loopback
 * SSH host) read it — test/harness/compiler-cache.ts names the same folder. Inside the build
 * folder, so removing native/build rebuilds from nothing.
 */
export const COMPILER_CACHE_DIR = path.join(buildDir, 'ccache');

/** Where the build puts its outputs. */
export const NATIVE_OUTPUTS = {
  addon: path.join(buildDir, 'Release', 'fsdp_native.node'),
  cli: path.join(buildDir, 'Release', 'fsdp-train-native'),
};

export function buildNative({ log = console.log, force = false } = {}) {
  ensureSystemPackages(['build'], log);
  const hash = sourceHash();
  const upToDate =
    !force &&
    existsSync(stampFile) &&
    readFileSync(stampFile, 'utf8') === hash &&
    Object.values(NATIVE_OUTPUTS).every(existsSync);
  if (upToDate) return false;
  const cmakeJs = path.join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  if (!existsSync(cmakeJs)) throw new Error('cmake-js is not installed; run npm install');
  log('building the native runtime (cmake-js)…');
  const jobs = String(Math.max(1, os.availableParallelism?.() ?? os.cpus().length));
  const r = spawnSync(
    process.execPath,
    [cmakeJs, 'build', '--directory', nativeDir, '--out', buildDir, '--parallel', jobs, '--log-level', 'warn'],
    {
      cwd: root,
      stdio: 'inherit',
      // Paths under native/ hashed relative to the build folder, as a build of a copy of native/
      // elsewhere has them, so that build finds these objects.
      env: { ...process.env, CCACHE_DIR: COMPILER_CACHE_DIR, CCACHE_BASEDIR: nativeDir },
    },
  );
  if (r.status !== 0) throw new Error(`native build failed (exit code ${r.status})`);
  writeFileSync(stampFile, hash);
  return true;
}

/** Hash of everything the native build reads from the repository. */
function sourceHash() {
  const h = createHash('sha256');
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (p === buildDir) continue;
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else h.update(path.relative(nativeDir, p)).update('\0').update(readFileSync(p));
    }
  };
  walk(nativeDir);
  // The runtime embeds the run-config schema (its defaults), so a schema change rebuilds it.
  const schema = path.join(root, 'core', 'schemas', 'run-config.schema.json');
  h.update('schema\0').update(readFileSync(schema));
  h.update(process.version); // the addon is built against this Node's API
  return h.digest('hex');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // npm ci run by the set-up (scripts/setup/index.mjs, SETUP_BUILDS_NATIVE): it builds next itself.
  if (process.env.FSDP_STUDIO_SETUP_BUILDS_NATIVE) process.exit(0);
  try {
    buildNative({ force: process.argv.includes('--force') });
  } catch (e) {
    console.error(`fsdp-studio: ${e.message}`);
    process.exit(1);
  }
}
