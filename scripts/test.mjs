// `npm test`: sets up whatever is missing (Debian packages, npm packages, the native build, sample
// data, code-server, bundles), then runs every test that needs no GPU with mocha.
// Arguments after `--` go to mocha: `npm test -- --grep "run log"`.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { setup, root } from './setup/index.mjs';

try {
  await setup('test');
} catch (e) {
  console.error(`npm test: set-up failed: ${e.message}`);
  process.exit(1);
}
// Every suite that needs no GPU, fastest first so a broken basic fails early.
export const ALL_SUITES = [
  'test/unit/**/*.test.ts',
  'test/lsp/**/*.test.ts',
  'test/native/**/*.test.ts',
  // First of the runs suite: its first-use test builds the runtime on the loopback "SSH host" (its
  // objects from the set-up's compiler cache: test/harness/compiler-cache.ts) into the folder every
  // later SSH test finds it in by content hash; after them, the first of those (hosts.test.ts) built
  // it and this one rebuilt it (mocha runs a file once).
  'test/runs/remote-runtime.test.ts',
  'test/runs/**/*.test.ts',
  'test/e2e/**/*.test.ts',
];
const args = process.argv.slice(2);
const specs = args.some((a) => /\.ts$|\*/.test(a)) ? [] : ALL_SUITES;
const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const r = spawnSync(process.execPath, [mocha, ...specs, ...args], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
