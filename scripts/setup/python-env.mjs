// The project's own Python environment: `.venv/` at the repository root, with the pinned PyTorch 2
// stack of python/requirements-dev.txt (fixed further by python/constraints-dev.txt). Made only
// when missing or when the pins changed: the stamp inside the venv records a hash of both files
// and the interpreter's version, so a second set-up costs one file read.
// Needs Python 3.11: the machine image carries PyTorch 2.13.0's CPU build for it (pip takes it
// from the image's wheel folder; any other Python would download a CUDA build of several GB).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const VENV_DIR = path.join(root, '.venv');
/** The interpreter every PyTorch test and benchmark uses. */
export const VENV_PYTHON = path.join(VENV_DIR, 'bin', 'python');
const REQUIREMENTS = path.join(root, 'python', 'requirements-dev.txt');
const CONSTRAINTS = path.join(root, 'python', 'constraints-dev.txt');
const STAMP = path.join(VENV_DIR, '.fsdp-studio-requirements-hash');
const PYTHON_VERSION = '3.11';

export function ensurePythonEnv({ log = console.log } = {}) {
  const base = findBasePython();
  const hash = requirementsHash(base);
  if (pythonEnvMatches(hash)) return;
  log(`making the Python environment .venv (PyTorch 2 CPU build and the pinned libraries; a few minutes, once)…`);
  rmSync(VENV_DIR, { recursive: true, force: true });
  run([base.path, '-m', 'venv', VENV_DIR], 'python -m venv');
  run(
    [
      VENV_PYTHON,
      '-m',
      'pip',
      'install',
      '--quiet',
      // No bytecode for every installed file (pip's default: about 50 s of CPU for torch, transformers
      // and the rest, 89 s -> 38 s): Python writes it for the modules a run imports, when it first
      // imports them (about 1 s for what the tests import).
      '--no-compile',
      '--disable-pip-version-check',
      '-r',
      REQUIREMENTS,
      '-c',
      CONSTRAINTS,
    ],
    'pip install of python/requirements-dev.txt',
  );
  writeFileSync(STAMP, hash);
}

/** Whether .venv is made from the current pins (false too where no Python 3.11 is found). */
export function pythonEnvReady() {
  try {
    return pythonEnvMatches(requirementsHash(findBasePython()));
  } catch {
    return false;
  }
}

function requirementsHash(base) {
  return createHash('sha256')
    .update(readFileSync(REQUIREMENTS))
    .update(readFileSync(CONSTRAINTS))
    .update(base.version)
    .digest('hex');
}

function pythonEnvMatches(hash) {
  return existsSync(STAMP) && readFileSync(STAMP, 'utf8') === hash && existsSync(VENV_PYTHON);
}

/** A Python 3.11 with the venv module: the first of python3.11 and python3 on PATH that is one. */
function findBasePython() {
  const tried = [];
  for (const candidate of ['python3.11', 'python3']) {
    const r = spawnSync(
      candidate,
      ['-c', 'import sys, venv; print("%d.%d" % sys.version_info[:2]); print(sys.executable)'],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) {
      tried.push(`${candidate}: ${r.error ? 'not found' : (r.stderr.trim().split('\n').pop() ?? `exit ${r.status}`)}`);
      continue;
    }
    const [version, executable] = r.stdout.trim().split('\n');
    if (version === PYTHON_VERSION) return { path: executable, version };
    tried.push(`${candidate}: Python ${version}`);
  }
  throw new Error(
    `the project's Python environment needs Python ${PYTHON_VERSION} with the venv module (PyTorch 2.13.0's CPU build is made for it); found ${tried.join('; ')}`,
  );
}

function run(argv, what) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${what} failed (exit code ${r.status ?? r.signal})`);
}

// `node scripts/setup/python-env.mjs`: the set-up runs it as a process of its own, beside the native build.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    ensurePythonEnv();
  } catch (e) {
    console.error(`fsdp-studio: ${e.message}`);
    process.exit(1);
  }
}
