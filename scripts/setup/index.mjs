// Idempotent set-up shared by `npm start` and `npm test`: Debian packages, npm packages, the
// native build, the sample data and the bundles. Each step checks first and does only what is
// missing, so a second run takes seconds. Uses only Node built-ins until npm packages exist.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSystemPackages } from './system-packages.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Set for npm ci's install script (scripts/setup/native.mjs) when the set-up builds the runtime itself after it. */
export const SETUP_BUILDS_NATIVE = 'FSDP_STUDIO_SETUP_BUILDS_NATIVE';

/**
 * purpose 'start': what npm start needs; 'test': everything the tests need (browser, sshd too).
 * `codeServer`: also install code-server (tests always; start only where no `code` exists).
 */
export async function setup(purpose, { codeServer = purpose === 'test', log = console.log } = {}) {
  const t0 = Date.now();
  const purposes = ['build', 'data'];
  if (codeServer) purposes.push('codeServer');
  if (purpose === 'test') purposes.push('format', 'test');
  ensureSystemPackages(purposes, log);
  ensureNpmPackages(log);
  // .venv's pip install and code-server's install (85 s and 49 s after the native build's 190 s in a
  // fresh clone) touch nothing the build does: they run beside it, each as a process of its own, and
  // take the cores the build leaves idle (its configure and link steps) and the time they wait on
  // the disk or npm's cache, instead of running after it.
  const { pythonEnvReady } = await import('./python-env.mjs');
  const { codeServerReady } = await import('./code-server.mjs');
  const python = pythonEnvReady()
    ? undefined
    : inBackground(
        'python-env.mjs',
        'making the Python environment .venv (PyTorch 2 CPU build and the pinned libraries; a few minutes, once)',
        log,
      );
  const codeServerJob =
    codeServer && !codeServerReady()
      ? inBackground('code-server.mjs', `installing code-server into .tools/code-server (once)`, log)
      : undefined;
  // In their own process groups (so that each ends with what it started): ended here on a failure,
  // on Ctrl+C or a kill.
  const stopAll = () => {
    python?.stop();
    codeServerJob?.stop();
  };
  const interrupted = (signal) => {
    stopAll();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('exit', stopAll).once('SIGINT', interrupted).once('SIGTERM', interrupted);
  try {
    const { buildNative } = await import('./native.mjs');
    buildNative({ log });
    ensureSampleData(log);
    if (purpose === 'test') {
      await python?.done;
      ensureLlamaSampleData(log);
    } else {
      // npm start: the PyTorch sample (samples/fsdp2-torchrun.fsdp-launch.yaml) runs with it; the rest of
      // the editor does not need it, so a machine without Python 3.11 still starts.
      try {
        await python?.done;
        ensureLlamaSampleData(log);
      } catch (e) {
        log(
          `note: ${e.message}; samples/fsdp2-torchrun.fsdp-launch.yaml and samples/smollm2-135m-cpu.yaml will not run until .venv exists`,
        );
      }
    }
    await codeServerJob?.done;
  } finally {
    // A step that failed leaves no install running on after it.
    stopAll();
    process.off('exit', stopAll).off('SIGINT', interrupted).off('SIGTERM', interrupted);
  }
  run([process.execPath, path.join(root, 'scripts', 'build.mjs')], 'bundling with esbuild');
  log(`set-up done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * Runs `node scripts/setup/<script>` as a process group of its own, its output into a file, while
 * this process goes on (its own steps block it: spawnSync). `done` settles when it ends and prints
 * its output then, so the set-up's log reads one step at a time; `stop()` ends it if still running.
 */
function inBackground(script, what, log) {
  log(`${what}, beside the rest of the set-up…`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-setup-'));
  const file = path.join(dir, 'output.log');
  const fd = openSync(file, 'w');
  const child = spawn(process.execPath, [path.join(root, 'scripts', 'setup', script)], {
    cwd: root,
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  let ended = false;
  const done = new Promise((resolve, reject) => {
    const end = (error) => {
      if (ended) return; // 'error' can come before 'exit'
      ended = true;
      const out = readFileSync(file, 'utf8').trimEnd();
      rmSync(dir, { recursive: true, force: true });
      log(`${what}: ${error ? 'failed' : 'done'}${out ? `; its output:\n${out}` : ''}`);
      if (error) reject(error);
      else resolve();
    };
    child.on('error', (e) => end(new Error(`${what}: could not start node ${script}: ${e.message}`)));
    child.on('exit', (code, signal) =>
      end(
        code === 0
          ? undefined
          : new Error(`${what} failed (node scripts/setup/${script}: exit code ${code ?? signal})`),
      ),
    );
  });
  // Awaited only once the steps before it are done: until then its failure is not unhandled.
  done.catch(() => undefined);
  return {
    done,
    stop: () => {
      if (ended || child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGTERM'); // the script and the pip or npm it runs
      } catch {
        // already gone
      }
    },
  };
}

/**
 * npm ci when node_modules was not installed from the current package-lock.json. The lock's hash
 * is recorded after a successful install (npm's own hidden lockfile leaves out optional packages
 * of other platforms, so it cannot be compared with the lock directly).
 */
function ensureNpmPackages(log) {
  const lockHash = createHash('sha256')
    .update(readFileSync(path.join(root, 'package-lock.json')))
    .digest('hex');
  const stamp = path.join(root, 'node_modules', '.fsdp-studio-lock-hash');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === lockHash) return;
  log('installing npm packages (npm ci)…');
  // The package's install script (the native build) is left to the set-up, which runs it next, with
  // the installs that can go beside it already started.
  run(['npm', 'ci', '--no-audit', '--no-fund'], 'npm ci', { ...process.env, [SETUP_BUILDS_NATIVE]: '1' });
  writeFileSync(stamp, lockHash);
}

function ensureSampleData(log) {
  for (const tokenizer of ['byte', 'gpt2']) {
    if (existsSync(path.join(root, 'samples', 'data', `fortunes-${tokenizer}-val.tok`))) continue;
    log(`preparing sample data (${tokenizer} tokens from Debian's fortunes)…`);
    run(
      [process.execPath, '--import', 'tsx', path.join(root, 'samples', 'prepare-data.ts'), '--tokenizer', tokenizer],
      'sample data preparation',
    );
  }
}

/** The Llama sample's tokenizer and token files: its tokenizer is trained by .venv's Python `tokenizers`. */
function ensureLlamaSampleData(log) {
  if (existsSync(path.join(root, 'samples', 'data', 'fortunes-bpe', 'val.tok'))) return;
  log("preparing the Llama sample's data (a BPE tokenizer trained on Debian's fortunes, then prepare)…");
  run(
    [process.execPath, '--import', 'tsx', path.join(root, 'samples', 'prepare-llama-data.ts')],
    "the Llama sample's data preparation",
  );
}

function run(argv, what, env = process.env) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${what} failed (exit code ${r.status ?? r.signal})`);
}
