// The PyTorch ground-truth harness of test/reference/ on this machine's CPU, with the project's Python
// environment (.venv: PyTorch 2.13 CPU, made here first if missing, scripts/setup/python-env.mjs).
// npm test never regenerates fixtures: it reads the committed ones.
//   node scripts/reference.mjs fixtures   regenerate test/fixtures/reference/ (npm run fixtures:reference):
//                                         the single-process fixtures (GPT, then the decoder family's),
//                                         then the parallel one
//   node scripts/reference.mjs parallel   only test/fixtures/reference/parallel/fp32.json (needs what
//                                         the set-up makes: the native build, the bundles, the sample data)
//   node scripts/reference.mjs test       the harness's own Python tests (npm run test:reference)
// The GPU measurements (memory, throughput) run on a GPU machine: see test/reference/README.md.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonEnv, VENV_PYTHON } from './setup/python-env.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const COMMANDS = {
  fixtures: [
    ['test/reference/make_fixtures.py', '--out', 'test/fixtures/reference'],
    ['test/reference/make_decoder_fixtures.py', '--out', 'test/fixtures/reference/decoder'],
    ['test/reference/make_parallel_fixture.py'],
  ],
  parallel: [['test/reference/make_parallel_fixture.py']],
  test: [['-m', 'unittest', 'discover', '--start-directory', 'test/reference', '--pattern', 'test_*.py']],
};

const [what, ...rest] = process.argv.slice(2);
if (!(what in COMMANDS)) {
  console.error(`usage: node scripts/reference.mjs ${Object.keys(COMMANDS).join('|')} [arguments for Python]`);
  process.exit(2);
}
try {
  ensurePythonEnv();
} catch (e) {
  console.error(`fsdp-studio: ${e.message}`);
  process.exit(1);
}
for (const argv of COMMANDS[what]) {
  const r = spawnSync(VENV_PYTHON, [...argv, ...rest], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
