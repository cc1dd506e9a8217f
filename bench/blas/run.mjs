// `npm run bench:blas`: which BLAS multiplies this CPU's training matrices fastest (issue 42 item 1).
// Every candidate comes from a package manager and is loaded with dlopen by one program
// (gemm_bench.c), which runs the float32 products a training step of the native runtime really
// calls — the shapes in shapes.json, recorded from the runtime's own cblas_sgemm calls (one step
// of each bench:cpu configuration, under shape_log.c) — at 2 threads and at 1.
// The machine is shared, so each product is timed by CPU time as well as wall time, the candidates
// run interleaved (A B C … A B C …, one process each) for --rounds rounds, and the figures are
// medians over rounds, given with the load average. The score of a candidate for a configuration is
// the BLAS CPU time of one training step: Σ over its shapes of (calls per step × CPU s per call).
// Writes bench/results/blas-<cpu kind>-<date>.json and .md.
//
//   npm run bench:blas [-- --rounds N] [--min-seconds S] [--threads 2,1] [--only NAME,...] [--tag T] [--record]
//   npm run bench:blas -- --end-to-end [--rounds N] [--steps N] [--configs NAME,...]
// --record: record shapes.json again from the runtime (needs native/build and samples/data).
// --end-to-end: whole training steps of the runtime on OpenBLAS and on MKL (mkl_preload.c),
// interleaved; --configs: of CONFIGS below (default gpt2-124m-t128-b8); --steps: per run, the first
// left out. Writes bench/results/blas-end-to-end-<cpu kind>-<date>.md and .json.
// Candidates whose library is missing are left out and named: the Debian ones come with
// `apt-get install libblis4-openmp libdnnl2` (neither changes the libblas.so.3 alternative), the PyPI
// ones are installed by this script into a venv of its own under ~/.cache/fsdp-studio/blas-candidates.
// --only: candidates by name (openblas-debian, openblas-pypi, mkl, mkl-cnr-off, blis, onednn). --tag: a suffix
// of the result files' names (e.g. "screen" for a one-round look at every candidate).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const args = process.argv.slice(2);
const argValue = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const ROUNDS = Number(argValue('--rounds', '3'));
const MIN_SECONDS = Number(argValue('--min-seconds', '0.06'));
const THREADS = argValue('--threads', '2,1').split(',').map(Number);
const ONLY = argValue('--only', '');
const TAG = argValue('--tag', '');
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`bench:blas: --rounds wants a whole number ≥ 1`);
if (!(MIN_SECONDS > 0)) throw new Error(`bench:blas: --min-seconds wants a positive number`);
if (!THREADS.every((t) => Number.isInteger(t) && t >= 1)) throw new Error(`bench:blas: --threads wants e.g. 2,1`);

const SHAPES_FILE = path.join(here, 'shapes.json');
const native = path.join(root, 'native', 'build', 'Release', 'fsdp-train-native');
const work = mkdtempSync(path.join(os.tmpdir(), 'fsdp-bench-blas-'));
const log = (msg) => console.error(`bench:blas: ${msg}`);

function compile(source, out, extra) {
  execFileSync('gcc', ['-O2', '-fopenmp', ...extra, '-o', out, path.join(here, source), '-ldl', '-lm'], {
    stdio: 'inherit',
  });
  return out;
}

// The PyPI candidates live in a venv of their own, outside the tree; pinned so a result names a build.
const PYPI = { 'scipy-openblas32': '0.3.34.481.3', mkl: '2026.2.1' };
const cacheDir = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'fsdp-studio');
const pypiVenv = path.join(cacheDir, 'blas-candidates');
function ensurePypiCandidates() {
  const stamp = path.join(pypiVenv, 'installed.json');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === JSON.stringify(PYPI)) return;
  mkdirSync(cacheDir, { recursive: true });
  log(
    `installing ${Object.entries(PYPI)
      .map(([p, v]) => `${p}==${v}`)
      .join(' ')} into ${pypiVenv}`,
  );
  execFileSync('python3', ['-m', 'venv', pypiVenv], { stdio: 'inherit' });
  execFileSync(
    path.join(pypiVenv, 'bin', 'pip'),
    ['install', '-q', ...Object.entries(PYPI).map(([p, v]) => `${p}==${v}`)],
    { stdio: 'inherit' },
  );
  writeFileSync(stamp, JSON.stringify(PYPI));
}

const debianLib = (...p) =>
  path.join('/usr/lib', execFileSync('gcc', ['-print-multiarch'], { encoding: 'utf8' }).trim(), ...p);
/** The candidates: name, how gemm_bench finds its entry points, where the library file is, how it is got. */
function candidates() {
  const pyLib = path.join(pypiVenv, 'lib');
  const sitePackages = existsSync(pyLib)
    ? path.join(pyLib, readdirPython(pyLib), 'site-packages')
    : path.join(pyLib, 'python3', 'site-packages');
  return [
    {
      name: 'openblas-debian',
      kind: 'openblas',
      file: debianLib('openblas-openmp', 'libopenblas.so.0'),
      source: 'Debian libopenblas0-openmp (the one the runtime links)',
      // The runtime's own kernel choice for this CPU (runtime/blas_kernels.h), as its runs get it.
      env: runtimeCoreType(),
    },
    {
      name: 'openblas-pypi',
      kind: 'scipy-openblas',
      file: path.join(sitePackages, 'scipy_openblas32', 'lib', 'libscipy_openblas.so'),
      source: `PyPI scipy-openblas32==${PYPI['scipy-openblas32']}`,
      env: {},
    },
    {
      name: 'mkl',
      kind: 'mkl',
      file: path.join(pyLib, 'libmkl_rt.so.3'),
      source: `PyPI mkl==${PYPI.mkl} (libmkl_rt, GNU OpenMP threading layer)`,
      // Run-to-run reproducible results on one CPU and thread count, as the runtime asks of MKL.
      env: { MKL_CBWR: 'AUTO' },
    },
    {
      // As PyTorch runs MKL: without conditional numerical reproducibility, so results may differ
      // from run to run with memory alignment; the runtime would not run it so (bit-for-bit resumes).
      name: 'mkl-cnr-off',
      kind: 'mkl',
      file: path.join(pyLib, 'libmkl_rt.so.3'),
      source: `PyPI mkl==${PYPI.mkl} (libmkl_rt, GNU OpenMP threading layer, MKL_CBWR unset)`,
      env: {},
    },
    {
      name: 'blis',
      kind: 'blis',
      file: debianLib('blis-openmp', 'libblis.so.4'),
      source: 'Debian libblis4-openmp',
      env: {},
    },
    {
      name: 'onednn',
      kind: 'onednn',
      file: debianLib('libdnnl.so.2'),
      source: 'Debian libdnnl2 (dnnl_sgemm)',
      env: {},
    },
  ].filter((c) => !ONLY || ONLY.split(',').includes(c.name));
}

function readdirPython(dir) {
  const found = execFileSync('ls', [dir], { encoding: 'utf8' })
    .split('\n')
    .find((d) => d.startsWith('python3'));
  return found ?? 'python3';
}

function runtimeCoreType() {
  if (!existsSync(native)) return {};
  const probe = JSON.parse(execFileSync(native, ['--probe'], { encoding: 'utf8' }));
  const chosen = probe.blas_kernels?.chosen;
  return chosen ? { OPENBLAS_CORETYPE: chosen } : {};
}

/** The CPU as the runtime's BLAS table names it: vendor and widest vector unit ("intel-avx512"). */
function cpuKind() {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const flags = new Set((info.match(/^flags\s*:(.*)$/m)?.[1] ?? '').trim().split(/\s+/));
  const vendor = info.match(/^vendor_id\s*:\s*(\S+)/m)?.[1] ?? 'unknown';
  const v = vendor === 'GenuineIntel' ? 'intel' : vendor === 'AuthenticAMD' ? 'amd' : vendor.toLowerCase();
  const tier = flags.has('avx512f') ? 'avx512' : flags.has('avx2') && flags.has('fma') ? 'avx2' : 'sse';
  const model = (info.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? '').trim();
  const family = info.match(/^cpu family\s*:\s*(\d+)/m)?.[1];
  const modelNo = info.match(/^model\s*:\s*(\d+)/m)?.[1];
  return {
    kind: `${v}-${tier}`,
    model,
    family: Number(family),
    model_number: `0x${Number(modelNo).toString(16)}`,
    bf16: flags.has('avx512_bf16'),
    amx: flags.has('amx_tile'),
  };
}

// ---- recording the runtime's shapes ------------------------------------------------------------

const CONFIGS = [
  { name: 'gpt2-124m-t128-b8', arch: 'gpt2', seq: 128, batch: 8 },
  { name: 'gpt2-124m-t512-b2', arch: 'gpt2', seq: 512, batch: 2 },
  { name: 'smollm2-135m-t512-b1', arch: 'llama', seq: 512, batch: 1 },
];

const MODELS = {
  gpt2: { d_model: 768, n_layers: 12, n_heads: 12, vocab_size: 50257, max_seq_len: 1024 },
  llama: {
    architecture: 'llama',
    d_model: 576,
    n_layers: 30,
    n_heads: 9,
    n_kv_heads: 3,
    intermediate_size: 1536,
    vocab_size: 49152,
    max_seq_len: 8192,
    rope_theta: 100000,
    rms_norm_eps: 0.00001,
    tie_embeddings: true,
  },
};

/** bench:cpu's configuration `c` (scripts/bench/cpu.mjs) for `steps` steps, as a file in the scratch folder. */
function runConfig(c, steps) {
  const data = path.join(root, 'samples', 'data');
  const config = path.join(work, `${c.name}-${steps}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      name: c.name,
      model: MODELS[c.arch],
      data: {
        train: path.join(data, c.arch === 'llama' ? 'fortunes-bpe/train.tok' : 'fortunes-gpt2-train.tok'),
        seq_len: c.seq,
      },
      training: { batch_size_per_gpu: c.batch, max_steps: steps, learning_rate: 0.0006, warmup_steps: 2 },
      fsdp: { sharding_strategy: 'NO_SHARD' },
      checkpointing: { save_final: false },
      activation_checkpointing: { enabled: false },
      launch: { threads_per_rank: 2 },
      logging: { tensorboard: false },
    }),
  );
  return config;
}

function recordShapes() {
  const shim = compile('shape_log.c', path.join(work, 'shape_log.so'), ['-shared', '-fPIC']);
  const recorded = {};
  for (const c of CONFIGS) {
    const config = runConfig(c, 1);
    const shapeLog = path.join(work, `${c.name}.shapes.jsonl`);
    log(`recording ${c.name}: one training step under shape_log.so`);
    const r = spawnSync(native, ['--config', config, '--run-dir', path.join(work, `run-${c.name}`)], {
      env: { ...process.env, LD_PRELOAD: shim, FSDP_BLAS_SHAPE_LOG: shapeLog },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`bench:blas: recording ${c.name}: fsdp-train-native exited with ${r.status}`);
    recorded[c.name] = readFileSync(shapeLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    if (recorded[c.name].some((s) => s.dropped_calls))
      throw new Error(`bench:blas: ${c.name}: shape_log dropped calls`);
  }
  writeFileSync(
    SHAPES_FILE,
    JSON.stringify(
      {
        about:
          'cblas_sgemm calls of one training step of the native runtime (forward, backward, no activation checkpointing), by shape; row-major; in_parallel: called from inside an OpenMP loop; recorded by npm run bench:blas -- --record',
        configs: CONFIGS,
        shapes: recorded,
      },
      null,
      1,
    ) + '\n',
  );
}

// ---- whole training steps: the runtime on OpenBLAS and on MKL (mkl_preload.c), interleaved ----

function endToEnd() {
  ensurePypiCandidates();
  const mkl = candidates().find((c) => c.name === 'mkl');
  const shim = compile('mkl_preload.c', path.join(work, 'mkl_preload.so'), ['-shared', '-fPIC']);
  const steps = Number(argValue('--steps', '3'));
  const names = argValue('--configs', 'gpt2-124m-t128-b8').split(',');
  const chosen = CONFIGS.filter((c) => names.includes(c.name));
  const variants = [
    { name: 'openblas-debian', env: runtimeCoreType() },
    { name: 'mkl', env: { LD_PRELOAD: shim, FSDP_BLAS_PRELOAD_MKL: mkl.file } },
  ];
  const loadStart = os.loadavg();
  const started = new Date();
  const rows = [];
  for (const c of chosen) {
    const config = runConfig(c, steps);
    const cpu = Object.fromEntries(variants.map((v) => [v.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of variants) {
        log(`${c.name}, round ${round + 1}/${ROUNDS}: the runtime on ${v.name} (load ${os.loadavg()[0].toFixed(1)})`);
        const runDir = path.join(work, `e2e-${c.name}-${v.name}-${round}`);
        const r = spawnSync(native, ['--config', config, '--run-dir', runDir], {
          env: { ...process.env, ...v.env },
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        if (r.status !== 0)
          throw new Error(`bench:blas: ${c.name} on ${v.name}: fsdp-train-native exited with ${r.status}`);
        const events = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        // The first step is the warm-up (allocation, packing buffers, the OS's page faults).
        const measured = events.filter((e) => e.type === 'step' && e.step > 1);
        cpu[v.name].push(...measured.map((e) => e.cpu_ms / 1000));
      }
    }
    const base = median(cpu['openblas-debian']);
    rows.push({
      config: c.name,
      steps_measured: cpu['openblas-debian'].length,
      step_cpu_s: Object.fromEntries(variants.map((v) => [v.name, median(cpu[v.name])])),
      all_step_cpu_s: cpu,
      mkl_speedup_cpu: base / median(cpu.mkl),
    });
  }
  const loadEnd = os.loadavg();
  const result = {
    date: started.toISOString(),
    command: `npm run bench:blas -- ${args.join(' ')}`.trim(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim(),
    cpu: cpuKind(),
    load_average: { start: loadStart, end: loadEnd },
    rounds: ROUNDS,
    steps_per_run: steps,
    mkl: mkl.source,
    rows,
  };
  const loadMd = (l) => l.map((x) => x.toFixed(1)).join(' / ');
  const md = `# The native runtime's whole training step on OpenBLAS and on MKL — ${result.cpu.kind} (${result.date.slice(0, 10)})

Command: \`${result.command}\` at ${result.commit}. CPU: ${result.cpu.model} (family ${result.cpu.family}, model ${result.cpu.model_number}), shared.
Load average (1 / 5 / 15 min): ${loadMd(loadStart)} at the start, ${loadMd(loadEnd)} at the end.

The runtime as built (Debian's OpenBLAS 0.3.21, its kernels as the runtime chooses them), and the
same binary with its cblas_sgemm and openblas_set_num_threads taken by bench/blas/mkl_preload.c
(LD_PRELOAD): ${mkl.source}, GNU OpenMP threads, MKL_CBWR=AUTO. ${ROUNDS} rounds, interleaved, ${steps}
steps a run, the first left out; 2 threads, fp32, AdamW. Step CPU time is the step event's cpu_ms
(all the process's threads), medians.

| configuration | steps | OpenBLAS CPU s / step | MKL CPU s / step | MKL speed-up (CPU) |
|---|---|---|---|---|
${rows.map((r) => `| ${r.config} | ${r.steps_measured} each | ${r.step_cpu_s['openblas-debian'].toFixed(2)} | ${r.step_cpu_s.mkl.toFixed(2)} | ${r.mkl_speedup_cpu.toFixed(2)}× |`).join('\n')}
`;
  const stem = path.join(root, 'bench', 'results', `blas-end-to-end-${result.cpu.kind}-${result.date.slice(0, 10)}`);
  writeFileSync(`${stem}.json`, JSON.stringify(result, null, 1) + '\n');
  writeFileSync(`${stem}.md`, md);
  log(`wrote ${stem}.md and .json`);
}

// ---- measuring ---------------------------------------------------------------------------------

const shapeKey = (s) => [s.ta, s.tb, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.beta_zero, s.in_parallel].join(' ');
const flops = (s) => 2 * s.m * s.n * s.k;
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

function measure(bench, cand, threads, keys) {
  const r = spawnSync(bench, [cand.kind, cand.file, String(threads), String(MIN_SECONDS)], {
    input: keys.join('\n') + '\n',
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    // The runtime runs with OMP_WAIT_POLICY=passive (its default): products called inside an OpenMP
    // loop behave very differently with spinning threads, so the benchmark runs as the runtime does.
    env: { ...process.env, OMP_WAIT_POLICY: 'passive', OMP_NUM_THREADS: String(threads), ...cand.env },
  });
  if (r.status !== 0) throw new Error(`bench:blas: gemm_bench ${cand.name} (${threads} threads) failed: ${r.stderr}`);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { library: lines[0].library, byKey: new Map(lines.slice(1).map((s) => [shapeKey(s), s])) };
}

if (args.includes('--record') || !existsSync(SHAPES_FILE)) recordShapes();
if (args.includes('--end-to-end')) {
  endToEnd();
  process.exit(0);
}
const shapes = JSON.parse(readFileSync(SHAPES_FILE, 'utf8'));
if (candidates().some((c) => c.source.startsWith('PyPI'))) ensurePypiCandidates();
const cands = candidates().filter((c) => {
  if (existsSync(c.file)) return true;
  log(`${c.name}: ${c.file} not found (${c.source}): left out`);
  return false;
});
const bench = compile('gemm_bench.c', path.join(work, 'gemm_bench'), []);
const allKeys = [...new Set(Object.values(shapes.shapes).flatMap((list) => list.map(shapeKey)))];
const cpu = cpuKind();
const loadStart = os.loadavg();
const started = new Date();

const samples = {}; // [threads][candidate][key] -> { cpu: [], wall: [], error }
const libraries = {};
for (const threads of THREADS) {
  samples[threads] = Object.fromEntries(cands.map((c) => [c.name, {}]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cands) {
      log(`${threads} thread(s), round ${round + 1}/${ROUNDS}: ${c.name} (load ${os.loadavg()[0].toFixed(1)})`);
      const m = measure(bench, c, threads, allKeys);
      libraries[c.name] = m.library;
      for (const [key, s] of m.byKey) {
        const slot = (samples[threads][c.name][key] ??= { cpu: [], wall: [], error: 0 });
        slot.cpu.push(s.cpu_s_per_call);
        slot.wall.push(s.wall_s_per_call);
        slot.error = Math.max(slot.error, s.max_rel_error);
      }
    }
  }
}
const loadEnd = os.loadavg();

// Per configuration and thread count: each candidate's BLAS time of one step, and per shape.
const results = [];
for (const threads of THREADS) {
  for (const [config, list] of Object.entries(shapes.shapes)) {
    const rows = cands.map((c) => {
      let cpuS = 0,
        wallS = 0,
        worstError = 0;
      const perShape = list.map((s) => {
        const m = samples[threads][c.name][shapeKey(s)];
        const cpuPer = median(m.cpu),
          wallPer = median(m.wall);
        cpuS += s.calls * cpuPer;
        wallS += s.calls * wallPer;
        worstError = Math.max(worstError, m.error);
        return {
          shape: shapeKey(s),
          calls: s.calls,
          cpu_s_per_call: cpuPer,
          gflops_per_cpu_s: flops(s) / cpuPer / 1e9,
        };
      });
      // Per round (the candidates run one after another within a round): the step's BLAS CPU time.
      const roundsCpuS = Array.from({ length: ROUNDS }, (_, r) =>
        list.reduce((sum, s) => sum + s.calls * samples[threads][c.name][shapeKey(s)].cpu[r], 0),
      );
      return {
        candidate: c.name,
        step_blas_cpu_s: cpuS,
        step_blas_wall_s: wallS,
        rounds_cpu_s: roundsCpuS,
        max_rel_error: worstError,
        per_shape: perShape,
      };
    });
    results.push({ config, threads, rows });
  }
}

const result = {
  date: started.toISOString(),
  command: `npm run bench:blas -- ${args.join(' ')}`.trim(),
  commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim(),
  cpu,
  cores: os.cpus().length,
  load_average: { start: loadStart, end: loadEnd },
  rounds: ROUNDS,
  min_seconds: MIN_SECONDS,
  candidates: cands.map((c) => ({
    name: c.name,
    source: c.source,
    file: c.file,
    env: c.env,
    library: libraries[c.name],
  })),
  results,
};

const fmt = (x, d = 3) => x.toFixed(d);
const base = 'openblas-debian';
const tables = results
  .map(({ config, threads, rows }) => {
    const ref = rows.find((r) => r.candidate === base) ?? rows[0];
    const head = `### ${config}, ${threads} thread${threads > 1 ? 's' : ''}\n\n| BLAS | BLAS CPU s / step | wall s / step | vs ${ref.candidate} (CPU) | same-round ratios: median (min–max) | worst rel. error |\n|---|---|---|---|---|---|`;
    // The ratio within each round (the two ran minutes apart at most), then its median: less of the load's drift.
    const paired = (r) => {
      const x = r.rounds_cpu_s.map((v, i) => ref.rounds_cpu_s[i] / v);
      return `${fmt(median(x), 2)}× (${fmt(Math.min(...x), 2)}–${fmt(Math.max(...x), 2)})`;
    };
    const body = rows
      .map(
        (r) =>
          `| ${r.candidate} | ${fmt(r.step_blas_cpu_s)} | ${fmt(r.step_blas_wall_s)} | ${fmt(ref.step_blas_cpu_s / r.step_blas_cpu_s, 2)}× | ${paired(r)} | ${r.max_rel_error.toExponential(1)} |`,
      )
      .join('\n');
    // The shapes that carry the step: the five largest by the reference's time.
    const big = [...ref.per_shape]
      .map((s, i) => ({ ...s, i, t: s.calls * s.cpu_s_per_call }))
      .sort((a, b) => b.t - a.t)
      .slice(0, 5);
    const shapeHead = `\n\nLargest shapes (ta tb m n k lda ldb ldc beta0 in_parallel; calls/step), GFLOP/s per CPU-second:\n\n| shape | calls | ${rows.map((r) => r.candidate).join(' | ')} |\n|---|---|${rows.map(() => '---').join('|')}|`;
    const shapeRows = big
      .map(
        (s) =>
          `| ${s.shape} | ${s.calls} | ${rows.map((r) => fmt(r.per_shape[s.i].gflops_per_cpu_s, 0)).join(' | ')} |`,
      )
      .join('\n');
    return `${head}\n${body}${shapeHead}\n${shapeRows}`;
  })
  .join('\n\n');

const loadMd = (l) => l.map((x) => x.toFixed(1)).join(' / ');
const md = `# BLAS candidates at the runtime's GEMM shapes — ${cpu.kind} (${result.date.slice(0, 10)})

Command: \`${result.command}\` at ${result.commit}. CPU: ${cpu.model} (family ${cpu.family}, model ${cpu.model_number}${cpu.bf16 ? ', AVX512-BF16' : ''}${cpu.amx ? ', AMX' : ''}), ${result.cores} cores, shared.
Load average (1 / 5 / 15 min): ${loadMd(loadStart)} at the start, ${loadMd(loadEnd)} at the end.

Each candidate is loaded with dlopen by one program (bench/blas/gemm_bench.c) and runs every
float32 product of one training step (bench/blas/shapes.json, recorded from the runtime's own
cblas_sgemm calls), OMP_WAIT_POLICY=passive as the runtime runs; attention's products from
inside an OpenMP loop as the runtime calls them. Candidates interleaved, ${ROUNDS} rounds, medians.
"BLAS CPU s / step" = Σ calls per step × median CPU seconds per call (all threads): the matrix
products' share of one training step, as on cores nobody else uses.

Candidates:
${result.candidates
  .map(
    (c) =>
      `- **${c.name}**: ${c.source} — ${c.library}${
        Object.keys(c.env).length
          ? ` (${Object.entries(c.env)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')})`
          : ''
      }`,
  )
  .join('\n')}

${tables}
`;

const out = path.join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const stem = path.join(out, `blas-${cpu.kind}-${result.date.slice(0, 10)}${TAG ? `-${TAG}` : ''}`);
writeFileSync(`${stem}.json`, JSON.stringify(result, null, 1) + '\n');
writeFileSync(`${stem}.md`, md);
log(`wrote ${stem}.md and .json`);
