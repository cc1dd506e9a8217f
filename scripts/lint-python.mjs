// The checks of the project's Python, with the tools pinned in its .venv (python/requirements-dev.txt):
// ruff's lint and format check (ruff.toml), then mypy (mypy.ini). `npm run lint` runs this, and
// test/unit/lint.test.ts does too, so a type error fails `npm test`. `--fix` lets ruff rewrite
// what it can (its safe fixes and its formatting) before checking.
//
// mypy sees each folder of scripts as the program Python runs it as: `python scripts/gpu/runs.py`
// puts scripts/gpu on the path, so `import summary` there means scripts/gpu/summary.py. One mypy run
// over every folder would instead find two top-level `ddp_train` modules (samples/pytorch and
// test/pytorch) and stop; so each folder is its own run, sharing mypy's cache (.mypy_cache).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonEnv, VENV_PYTHON } from './setup/python-env.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fix = process.argv.includes('--fix');

try {
  ensurePythonEnv();
} catch (e) {
  console.error(`lint-python: ${e.message}`);
  process.exit(2);
}

const failed = [];
if (fix) {
  python(['-m', 'ruff', 'check', '--fix', '--quiet', '.']);
  python(['-m', 'ruff', 'format', '--quiet', '.']);
}
if (python(['-m', 'ruff', 'check', '.']).status !== 0) failed.push('ruff check');
if (python(['-m', 'ruff', 'format', '--check', '.']).status !== 0) {
  failed.push('ruff format --check (node scripts/lint-python.mjs --fix formats)');
}
for (const [folder, targets] of programs()) {
  const r = python(['-m', 'mypy', '--config-file', 'mypy.ini', ...targets]);
  if (r.status !== 0) failed.push(`mypy ${folder}`);
}
if (failed.length) {
  console.error(`lint-python: failed: ${failed.join('; ')}`);
  process.exit(1);
}

/**
 * The folders mypy checks one at a time, each with what it checks: its top-level packages (a folder
 * with an __init__.py, checked whole) and its loose files. The files are the ones ruff lints, so
 * ruff.toml's include and exclude say what both tools see.
 */
function programs() {
  const listed = python(['-m', 'ruff', 'check', '--show-files', '.'], { capture: true });
  if (listed.status !== 0) throw new Error(`lint-python: ruff check --show-files failed:\n${listed.stderr}`);
  const byFolder = new Map();
  for (const line of listed.stdout.split('\n')) {
    const file = line.trim();
    if (!file.endsWith('.py')) continue;
    let dir = path.dirname(file);
    let target = file;
    while (existsSync(path.join(dir, '__init__.py'))) {
      target = dir;
      dir = path.dirname(dir);
    }
    const folder = path.relative(root, dir) || '.';
    if (!byFolder.has(folder)) byFolder.set(folder, new Set());
    byFolder.get(folder).add(path.relative(root, target));
  }
  return [...byFolder].map(([folder, targets]) => [folder, [...targets].sort()]).sort(([a], [b]) => a.localeCompare(b));
}

function python(args, { capture = false } = {}) {
  const r = spawnSync(VENV_PYTHON, args, {
    cwd: root,
    encoding: 'utf8',
    stdio: capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'],
    maxBuffer: 64 << 20,
  });
  if (r.error) throw new Error(`lint-python: ${VENV_PYTHON} ${args.join(' ')}: ${r.error.message}`);
  return r;
}
