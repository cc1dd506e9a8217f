// `npm test`: sets up whatever is missing (Debian packages, npm packages, the native build, sample
// data, code-server, bundles), then runs every test that needs no GPU with mocha — in two lanes side
// by side (scripts/test-lanes.mjs says which file runs where and why), each line of their output
// marked with its lane, and each lane's summary and failures repeated whole at the end.
// Arguments after `--` go to mocha: `npm test -- --grep "run log"` (both lanes);
// `npm test -- test/unit/foo.test.ts` runs the named files in one mocha. FSDP_TEST_LANES=1 runs the
// whole suite in one mocha, one file after another, as before the lanes.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { setup, root } from './setup/index.mjs';
import { LANES, SERIAL } from './test-lanes.mjs';

try {
  await setup('test');
} catch (e) {
  console.error(`npm test: set-up failed: ${e.message}`);
  process.exit(1);
}

const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const args = process.argv.slice(2);
const namesFiles = args.some((a) => /\.ts$|\*/.test(a));

/** One mocha; resolves to its exit status. `label` marks its lines (none: its output passes as is). */
function runMocha(mochaArgs, label) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [mocha, ...mochaArgs], {
      cwd: root,
      stdio: label ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    });
    const tail = [];
    if (label) {
      for (const stream of [child.stdout, child.stderr]) {
        readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
          console.log(`${label}| ${line}`);
          // What mocha prints from its summary on ("N passing") is kept to repeat at the end.
          if (tail.length > 0 || /^\s+\d+ passing/.test(line)) tail.push(line);
        });
      }
    }
    child.on('error', (e) => {
      console.error(`npm test: mocha${label ? ` (lane ${label})` : ''} did not start: ${e.message}`);
      resolve({ status: 1, tail });
    });
    child.on('close', (code, signal) => resolve({ status: code ?? (signal ? 1 : 0), signal, tail }));
  });
}

if (namesFiles) {
  process.exit((await runMocha(args)).status);
}
if (process.env.FSDP_TEST_LANES === '1') {
  process.exit((await runMocha([...SERIAL, ...args])).status);
}
const started = Date.now();
const results = await Promise.all(
  Object.entries(LANES).map(async ([label, lane]) => {
    const ignore = lane.ignore.flatMap((f) => ['--ignore', f]);
    return { label, ...(await runMocha([...lane.specs, ...ignore, ...args], label)) };
  }),
);
console.log(`\nnpm test: both lanes ended after ${Math.round((Date.now() - started) / 1000)} s`);
for (const r of results) {
  console.log(`\nlane ${r.label}: exit ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}`);
  for (const line of r.tail) console.log(line);
}
process.exit(results.every((r) => r.status === 0) ? 0 : 1);
