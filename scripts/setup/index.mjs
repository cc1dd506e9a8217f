// Idempotent set-up shared by `npm start` and `npm test`: Debian packages, npm packages, the
// native build, the sample data and the bundles. Each step checks first and does only what is
// missing, so a second run takes seconds. Uses only Node built-ins until npm packages exist.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSystemPackages } from './system-packages.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

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
  const { buildNative } = await import('./native.mjs');
  buildNative({ log });
  ensureSampleData(log);
  const { ensurePythonEnv } = await import('./python-env.mjs');
  if (purpose === 'test') {
    ensurePythonEnv({ log });
    ensureLlamaSampleData(log);
  } else {
    // npm start: the PyTorch sample (samples/fsdp2-torchrun.fsdp-launch.yaml) runs with it; the rest of
    // the editor does not need it, so a machine without Python 3.11 still starts.
    try {
      ensurePythonEnv({ log });
      ensureLlamaSampleData(log);
    } catch (e) {
      log(
        `note: ${e.message}; samples/fsdp2-torchrun.fsdp-launch.yaml and samples/smollm2-135m-cpu.yaml will not run until .venv exists`,
      );
    }
  }
  if (codeServer) {
    const { ensureCodeServer } = await import('./code-server.mjs');
    await ensureCodeServer({ log });
  }
  run([process.execPath, path.join(root, 'scripts', 'build.mjs')], 'bundling with esbuild');
  log(`set-up done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
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
  run(['npm', 'ci', '--no-audit', '--no-fund'], 'npm ci');
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

function run(argv, what) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${what} failed (exit code ${r.status ?? r.signal})`);
}
