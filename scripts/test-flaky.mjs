// `npm run test:flaky -- FILES… [--times N] [--grep TEXT] [--no-load] [--out FILE]`: a flake detector
// (issue 38, item 4). Runs the test files N times (3 unless told) under a load it makes itself — one
// busy loop per core, stopped at the end whatever happens — and reports every test that failed at
// least once, with how often and its first message. A suite that passes only on a quiet machine is
// one nobody trusts: developers' machines are loaded (load 7–9 on 2 cores is ordinary here).
//
// Each run is mocha with its JSON reporter writing to a file (the tests' own output goes to a log
// beside it, so it cannot corrupt the JSON). Writes the report as JSON to --out (default
// test-output/flaky/report.json) and prints it; exits 1 when any test failed at least once, 2 on a
// usage error or a run that left no report.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function usage(message) {
  console.error(`test:flaky: ${message}`);
  console.error('usage: npm run test:flaky -- FILES… [--times N] [--grep TEXT] [--no-load] [--out FILE]');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    files: [],
    times: 3,
    grep: undefined,
    load: true,
    out: path.join(root, 'test-output', 'flaky', 'report.json'),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--times') {
      opts.times = Number(value());
      if (!Number.isInteger(opts.times) || opts.times < 1)
        usage(`--times ${argv[i]}: a whole number of runs, at least 1`);
    } else if (a === '--grep') opts.grep = value();
    else if (a === '--out') opts.out = path.resolve(value());
    else if (a === '--no-load') opts.load = false;
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else opts.files.push(a);
  }
  if (opts.files.length === 0) usage('name the test files to rerun');
  return opts;
}

/** One busy loop per core, as separate processes (a loaded machine, not a loaded event loop). */
function startLoad() {
  const loops = [];
  for (let i = 0; i < os.availableParallelism(); i++) {
    loops.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  }
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    for (const loop of loops) loop.kill('SIGKILL');
  };
  // Stopped however this script ends: normally, by an error, or by Ctrl-C / a CI cancel.
  process.on('exit', stop);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      stop();
      process.exit(128 + os.constants.signals[signal]);
    });
  }
  return { loops: loops.length, stop };
}

/** Runs mocha once over the files; resolves to its JSON report (undefined when it wrote none) and exit code. */
function runOnce(opts, index, dir) {
  const reportFile = path.join(dir, `run-${index}.json`);
  const logFile = path.join(dir, `run-${index}.log`);
  rmSync(reportFile, { force: true });
  const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
  const args = [mocha, ...opts.files, '--reporter', 'json', '--reporter-option', `output=${reportFile}`];
  if (opts.grep) args.push('--grep', opts.grep);
  return new Promise((resolve) => {
    const log = createWriteStream(logFile);
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('close', (code, signal) => {
      log.end();
      let report;
      try {
        report = JSON.parse(readFileSync(reportFile, 'utf8'));
      } catch {
        report = undefined;
      }
      resolve({ report, code: code ?? signal, logFile });
    });
  });
}

const opts = parseArgs(process.argv.slice(2));
const dir = path.dirname(opts.out);
mkdirSync(dir, { recursive: true });
const load = opts.load ? startLoad() : undefined;
const started = Date.now();
/** fullTitle + file → what happened to it over the runs. */
const tests = new Map();
const runs = [];
let broken = false;
try {
  for (let i = 1; i <= opts.times; i++) {
    const t0 = Date.now();
    console.log(`test:flaky: run ${i} of ${opts.times}${load ? ` under ${load.loops} busy loops` : ''}…`);
    const { report, code, logFile } = await runOnce(opts, i, dir);
    const load1m = +os.loadavg()[0].toFixed(2);
    if (!report) {
      broken = true;
      runs.push({
        run: i,
        exit: code,
        error: `mocha wrote no JSON report: see ${logFile}`,
        seconds: (Date.now() - t0) / 1000,
      });
      console.log(`test:flaky: run ${i} wrote no report (exit ${code}): see ${logFile}`);
      continue;
    }
    const seen = (t) => {
      const key = `${t.file ?? ''} :: ${t.fullTitle}`;
      let entry = tests.get(key);
      if (!entry) tests.set(key, (entry = { file: t.file, title: t.fullTitle, passed: 0, failed: 0, messages: [] }));
      return entry;
    };
    for (const t of report.passes ?? []) seen(t).passed++;
    // failures include hooks ("before all" hook …), which fail every test under them.
    for (const t of report.failures ?? []) {
      const entry = seen(t);
      entry.failed++;
      const message = String(t.err?.message ?? '')
        .split('\n')[0]
        .slice(0, 300);
      entry.messages.push(`run ${i}: ${message}`);
    }
    const s = report.stats ?? {};
    runs.push({
      run: i,
      exit: code,
      passes: s.passes,
      failures: s.failures,
      pending: s.pending,
      seconds: (Date.now() - t0) / 1000,
      load1m,
      log: logFile,
    });
    console.log(
      `test:flaky: run ${i}: ${s.passes} passed, ${s.failures} failed, ${s.pending} pending in ${((Date.now() - t0) / 1000).toFixed(0)} s (load ${load1m})`,
    );
  }
} finally {
  load?.stop();
}

const flaky = [...tests.values()].filter((t) => t.failed > 0);
const result = {
  files: opts.files,
  times: opts.times,
  grep: opts.grep ?? null,
  busyLoops: load?.loops ?? 0,
  cores: os.availableParallelism(),
  seconds: (Date.now() - started) / 1000,
  tests: tests.size,
  failedAtLeastOnce: flaky,
  runs,
};
writeFileSync(opts.out, JSON.stringify(result, null, 2) + '\n');
console.log(
  `\ntest:flaky: ${tests.size} tests, ${opts.times} runs each${load ? ` under ${load.loops} busy loops on ${result.cores} cores` : ''}: ${flaky.length} failed at least once`,
);
for (const t of flaky) {
  console.log(`  ${t.failed}/${t.failed + t.passed}  ${t.title}  (${t.file ?? 'no file'})`);
  for (const m of t.messages) console.log(`        ${m}`);
}
console.log(`test:flaky: report in ${path.relative(process.cwd(), opts.out)}`);
process.exit(broken ? 2 : flaky.length ? 1 : 0);
