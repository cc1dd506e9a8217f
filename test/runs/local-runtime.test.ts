// The native runtime of an installed extension, built on this machine on first use
// (runs/runtime/local-runtime.ts, sharing runtime-build.ts with SSH hosts): where it goes, and
// what a person is told when the machine lacks a tool or a library, Cancel, the kept log and the
// progress shown — real CMake, real PATHs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BuildProgress } from '../../runs/runtime/build-progress';
import { BuildCancelled, LocalRuntime, runtimeCacheRoot } from '../../runs/runtime/local-runtime';
import { missingPackages, sourceHash } from '../../runs/runtime/runtime-build';

/** An extension folder with runtime sources of our choosing. */
function fakeExtension(root: string, cmakeLists: string): string {
  const ext = path.join(root, 'extension');
  mkdirSync(path.join(ext, 'native'), { recursive: true });
  mkdirSync(path.join(ext, 'core', 'schemas'), { recursive: true });
  writeFileSync(path.join(ext, 'native', 'CMakeLists.txt'), cmakeLists);
  writeFileSync(path.join(ext, 'core', 'schemas', 'run-config.schema.json'), '{}');
  return ext;
}

describe('the native runtime built on first use (installed extension)', function () {
  this.timeout(120_000);
  let tmp: string;
  const path0 = process.env.PATH;

  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-local-runtime-'));
  });
  afterEach(() => {
    process.env.PATH = path0;
    rmSync(tmp, { recursive: true, force: true });
  });

  it("lives in the cache under the sources' hash; a source checkout uses its own build", () => {
    const ext = fakeExtension(tmp, 'project(x)\n');
    const runtime = new LocalRuntime(ext, path.join(tmp, 'cache'));
    assert.equal(runtime.fromCheckout, false);
    assert.equal(runtime.dir, path.join(tmp, 'cache', sourceHash(ext).slice(0, 16), 'Release'));
    assert.equal(runtime.isBuilt(), false);
    assert.equal(runtimeCacheRoot({ FSDP_RUNTIME_CACHE: '/x' }), '/x');
    assert.equal(runtimeCacheRoot({ XDG_CACHE_HOME: '/c' }), '/c/fsdp-studio/runtime');
    const repo = path.resolve(__dirname, '..', '..');
    assert.equal(
      new LocalRuntime(repo).dir,
      path.join(repo, 'native', 'build', 'Release'),
      'the checkout built by npm install',
    );
  });

  it('names the tools this machine lacks and the packages that have them', async () => {
    const ext = fakeExtension(tmp, 'project(x)\n');
    const bin = path.join(tmp, 'bin');
    mkdirSync(bin);
    for (const tool of ['make'])
      symlinkSync(
        spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(),
        path.join(bin, tool),
      );
    process.env.PATH = bin;
    const runtime = new LocalRuntime(ext, path.join(tmp, 'cache'));
    await assert.rejects(
      runtime.ensure(() => undefined),
      /This machine lacks cmake, c\+\+, pkg-config, needed to build the native runtime\. On Debian or Ubuntu: sudo apt-get install cmake g\+\+ pkg-config libopenblas-dev/,
    );
  });

  it('a library CMake cannot find is named by its Debian package, and no half-built folder is left', async () => {
    const ext = fakeExtension(
      tmp,
      'cmake_minimum_required(VERSION 3.18)\nproject(x LANGUAGES CXX)\nfind_package(PkgConfig REQUIRED)\npkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas-that-is-not-installed)\n',
    );
    const cache = path.join(tmp, 'cache');
    const steps: string[] = [];
    const runtime = new LocalRuntime(ext, cache);
    await assert.rejects(
      runtime.ensure((m) => steps.push(m)),
      (e: Error) => {
        assert.match(
          e.message,
          /building the native runtime on this machine failed: it lacks libopenblas-dev \(on Debian or Ubuntu: sudo apt-get install libopenblas-dev\)/,
        );
        assert.match(e.message, /openblas-that-is-not-installed/, 'with what CMake said');
        return true;
      },
    );
    assert.deepEqual(steps.slice(0, 2), ['checking the build tools…', 'configuring the build (CMake)…']);
    assert.deepEqual(
      spawnSync('ls', ['-A', cache], { encoding: 'utf8' }).stdout.trim(),
      path.basename(runtime.buildLog),
      'the failed build is removed; its log is kept for the person to read',
    );
    assert.match(readFileSync(runtime.buildLog, 'utf8'), /openblas-that-is-not-installed/);
  });

  it('a build cancelled while compiling stops the compiler at once and leaves nothing built', async () => {
    // The two targets an installed extension builds, each a command that would run for minutes.
    const ext = fakeExtension(
      tmp,
      'cmake_minimum_required(VERSION 3.18)\nproject(x NONE)\nadd_custom_target(fsdp-train-native COMMAND sleep 371)\nadd_custom_target(fsdp_addon COMMAND sleep 371)\n',
    );
    const cache = path.join(tmp, 'cache');
    const runtime = new LocalRuntime(ext, cache);
    const cancel = new AbortController();
    const steps: string[] = [];
    // The build's commands would run 371 s, over the test's timeout: only the cancel ends it in time.
    await assert.rejects(
      runtime.ensure((m) => {
        steps.push(m);
        // Cancelled once the compile step has begun (its sleeps are running by then or soon).
        if (m.startsWith('compiling (')) setTimeout(() => cancel.abort(), 1000);
      }, cancel.signal),
      (e: Error) => e instanceof BuildCancelled && /cancelled: nothing was built/.test(e.message),
    );
    assert.equal(spawnSync('pgrep', ['-f', 'sleep 371']).status, 1, 'no compile command is left running');
    assert.equal(runtime.isBuilt(), false);
    assert.deepEqual(
      spawnSync('ls', ['-A', cache], { encoding: 'utf8' }).stdout.trim(),
      path.basename(runtime.buildLog),
      'only the log is left',
    );
  });

  it("shows a build's progress as a percentage that never goes back, then how long the rest should take", () => {
    const p = new BuildProgress(0);
    // Make: per-target percentages, the second target's starting below the first's end.
    assert.deepEqual(p.line('[ 18%] Building CXX object CMakeFiles/a.dir/a.cc.o', 5_000), {
      percent: 18,
      message: 'compiling: 18%',
    });
    assert.equal(p.line('-- some other line', 6_000), undefined);
    assert.equal(p.line('[100%] Linking CXX shared library fsdp_native.node', 20_000)?.percent, 100);
    assert.equal(p.line('[ 98%] Building CXX object x.o', 21_000), undefined, 'never back from 100%');
    // Ninja: every object counted; after a tenth and 30 s, the time left at the pace so far.
    const n = new BuildProgress(0);
    assert.equal(n.line('[5/110] Building CXX object a.o', 10_000)?.message, 'compiling: 4%');
    assert.equal(n.line('[22/110] Building CXX object b.o', 60_000)?.message, 'compiling: 20% — about 4 min left');
    assert.equal(n.line('[88/110] Building CXX object c.o', 240_000)?.message, 'compiling: 80% — about 60 s left');
    assert.equal(n.line('[20/110] Building CXX object d.o', 241_000), undefined);
    assert.equal(n.line('[110/110] Linking CXX executable fsdp-train-native', 300_000)?.message, 'compiling: 100%');
  });

  it('reads the packages out of what CMake and the compiler say', () => {
    assert.deepEqual(
      missingPackages(
        'CMake Error at CMakeLists.txt:30 (find_package):\n  Could not find a package configuration file provided by "nlohmann_json"',
      ),
      ['nlohmann-json3-dev'],
    );
    assert.deepEqual(missingPackages('-- Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)'), [
      'zlib1g-dev',
    ]);
    assert.deepEqual(
      missingPackages(
        '-- Found nlohmann_json: /usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake (found suitable version "3.11.2")',
      ),
      [],
      'a library found is not missing',
    );
    assert.deepEqual(missingPackages('all good'), []);
  });
});
