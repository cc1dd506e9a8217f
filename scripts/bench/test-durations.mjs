// `npm run bench:test-durations [-- FILES…]`: how long the steps take that tests used to bound by the
// clock (issue 38, item 2). The tests now assert a condition (nothing started, the job ended, no
// rebuild, the small document not waiting on the large one) and hand the duration to
// test/harness/durations.ts, which appends it to $FSDP_TEST_DURATIONS; this runs those test files
// with that set, once, and writes bench/results/test-durations-<date>.json and .md with every figure,
// the load when it was taken, the machine and this command. A figure that grows is a regression to
// look into; it is never a test's verdict.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from '../setup/index.mjs';
import { provenance, scratchFolder, writeResults } from './native-bench.mjs';

/** The files whose durations used to be verdicts (issue 38's list). */
const FILES = [
  'test/native/hardening-cli.test.ts',
  'test/native/hardening-checkpoints.test.ts',
  'test/native/hardening-data.test.ts',
  'test/native/sharding-launch.test.ts',
  'test/native/sharding-recovery.test.ts',
  'test/native/hardening-collectives.test.ts',
  'test/native/gtest.test.ts',
  'test/lsp/large-documents.test.ts',
  'test/runs/remote-runtime.test.ts',
];

const files = process.argv.slice(2).length ? process.argv.slice(2) : FILES;
const work = scratchFolder('test-durations');
const record = path.join(work, 'durations.jsonl');
rmSync(record, { force: true });
const started = new Date();
const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const r = spawnSync(process.execPath, [mocha, ...files], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, FSDP_TEST_DURATIONS: record },
});
let figures = [];
try {
  figures = readFileSync(record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
} catch {
  // no test recorded anything: the results say so
}
rmSync(work, { recursive: true, force: true });
const command = `npm run bench:test-durations${process.argv.length > 2 ? ` -- ${files.join(' ')}` : ''}`;
const result = {
  date: started.toISOString(),
  command,
  ...provenance({ load_at_start: +os.loadavg()[0].toFixed(2) }),
  files,
  mocha_exit: r.status ?? r.signal,
  figures,
};
const rows = figures.map((f) => `| ${f.what} | ${(f.ms / 1000).toFixed(2)} | ${f.load1m} |`).join('\n');
const markdown = `# Durations the tests no longer bound (${result.date.slice(0, 10)})

Command: \`${command}\` (commit ${result.commit}). Machine: ${result.machine.cpu}, ${result.machine.cores} cores,
${result.machine.memory_gib} GiB, Node ${result.machine.node}; 1-minute load at the start ${result.machine.load_at_start}.
mocha exited ${result.mocha_exit}${result.mocha_exit === 0 ? '' : ' (a failing test: its figures may be missing)'}.

Each test asserts a condition; these are how long its steps took, with the load when each ended (a
shared machine: compare figures taken at similar load).

| step | seconds | load (1 min) |
|---|---:|---:|
${rows || '| (none recorded) | | |'}
`;
writeResults('test-durations', result, markdown);
console.log(markdown);
process.exit(r.status === 0 ? 0 : 1);
