// The PyTorch ground-truth harness of test/reference/ on this machine's CPU, with Debian's PyTorch
// (installed here first: the 'reference' group of setup/system-packages.mjs). npm test never needs it.
//   node scripts/reference.mjs fixtures   regenerate test/fixtures/reference/ (npm run fixtures:reference)
//   node scripts/reference.mjs test       the harness's own Python tests (npm run test:reference)
// The GPU measurements (memory, throughput) run on a GPU machine: see test/reference/README.md.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSystemPackages } from './setup/system-packages.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const COMMANDS = {
  fixtures: ['test/reference/make_fixtures.py', '--out', 'test/fixtures/reference'],
  test: ['-m', 'unittest', 'discover', '--start-directory', 'test/reference', '--pattern', 'test_*.py'],
};

const [what, ...rest] = process.argv.slice(2);
if (!(what in COMMANDS)) {
  console.error(`usage: node scripts/reference.mjs ${Object.keys(COMMANDS).join('|')} [arguments for Python]`);
  process.exit(2);
}
try {
  ensureSystemPackages(['reference']);
} catch (e) {
  console.error(`fsdp-studio: ${e.message}`);
  process.exit(1);
}
// Debian's torch lives in the system interpreter, which a pyenv or venv `python3` on PATH would hide.
const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const r = spawnSync(python, [...COMMANDS[what], ...rest], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
