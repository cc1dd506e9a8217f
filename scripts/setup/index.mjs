// Idempotent set-up shared by `npm start` and `npm test`: Debian packages, npm packages, the
// native build, the sample data and the bundles. Each step checks first and does only what is
// missing, so a second run takes seconds. Uses only Node built-ins until npm packages exist.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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
  if (purpose === 'test') purposes.push('test');
  ensureSystemPackages(purposes, log);
  ensureNpmPackages(log);
  const { buildNative } = await import('./native.mjs');
  buildNative({ log });
  ensureSampleData(log);
  if (codeServer) {
    const { ensureCodeServer } = await import('./code-server.mjs');
    await ensureCodeServer({ log });
  }
  run([process.execPath, path.join(root, 'scripts', 'build.mjs')], 'bundling with esbuild');
  log(`set-up done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** npm ci when node_modules is absent or older than package-lock.json. */
function ensureNpmPackages(log) {
  const lock = path.join(root, 'package-lock.json');
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  if (existsSync(installed) && sameDependencies(lock, installed)) return;
  log('installing npm packages (npm ci)…');
  run(['npm', 'ci', '--no-audit', '--no-fund'], 'npm ci');
}

function sameDependencies(lockFile, installedFile) {
  const strip = (f) => {
    const { packages = {} } = JSON.parse(readFileSync(f, 'utf8'));
    return JSON.stringify(Object.keys(packages).filter((k) => k).sort().map((k) => [k, packages[k].version]));
  };
  return strip(lockFile) === strip(installedFile);
}

function ensureSampleData(log) {
  for (const tokenizer of ['byte', 'gpt2']) {
    if (existsSync(path.join(root, 'samples', 'data', `fortunes-${tokenizer}-val.tok`))) continue;
    log(`preparing sample data (${tokenizer} tokens from Debian's fortunes)…`);
    run([process.execPath, '--import', 'tsx', path.join(root, 'samples', 'prepare-data.ts'), '--tokenizer', tokenizer], 'sample data preparation');
  }
}

function run(argv, what) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${what} failed (exit code ${r.status ?? r.signal})`);
}
