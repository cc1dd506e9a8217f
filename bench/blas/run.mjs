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
//   npm run bench:blas -- --end-to-end [--bf16] [--rounds N] [--steps N] [--configs NAME,...]
//   npm run bench:blas -- --bf16 [--rounds N] [--min-seconds S] [--threads 2] [--only NAME,...]
//   npm run bench:blas -- --fusion [--rounds N] [--min-seconds S] [--only NAME,...]
// --record: record shapes.json again from the runtime (needs native/build and samples/data).
// --end-to-end: whole training steps of the runtime on OpenBLAS and on MKL (mkl_preload.c),
// interleaved; --configs: of CONFIGS below (default gpt2-124m-t128-b8); --steps: per run, the first
// left out. Writes bench/results/blas-end-to-end-<cpu kind>-<date>.md and .json. With --bf16 a third
// run per round, every product in bf16 through MKL (mkl_preload.c, FSDP_BLAS_PRELOAD_BF16=1), with the
// steps' losses beside fp32's: blas-end-to-end-bf16-<cpu kind>-<date>.md.
// Candidates whose library is missing are left out and named: the Debian ones come with
// `apt-get install libblis4-openmp libdnnl2` (neither changes the libblas.so.3 alternative), the PyPI
// ones are installed by this script into a venv of its own under ~/.cache/fsdp-studio/blas-candidates.
// --only: candidates by name (openblas-debian, openblas-pypi, mkl, mkl-cnr-off, blis, onednn). --tag: a suffix
// of the result files' names (e.g. "screen" for a one-round look at every candidate).
// --bf16 (issue 42 item 2): the same shapes with bfloat16 operands and float32 accumulation and output
// (mixed precision's products) in the libraries that have such a GEMM — MKL's cblas_gemm_bf16bf16f32
// (AMX where the CPU has it, and once more held to AVX512-BF16 by MKL_ENABLE_INSTRUCTIONS=AVX512_E3, to
// show what AMX gives), oneDNN's matmul primitive and its dnnl_gemm_bf16bf16f32 — beside fp32 Debian
// OpenBLAS, interleaved. Each bf16 product's figure comes with the time to round its two fp32 operands to
// bf16 (the runtime keeps fp32 master weights and fp32 activations), so the gain is given with and without
// it. Whether an OpenBLAS candidate exports sbgemm (OpenBLAS's bf16 GEMM) is looked up with nm and
// recorded. Writes bench/results/blas-bf16-<cpu kind>-<date>[-tag].md/.json.
// --fusion (issue 42 item 3): fewer, larger products. For each recorded configuration, the products
// that are one product in the runtime (q | k | v, and the Llama MLP's gate | up: forward, input and
// weight gradients) against the separate products an unfused model multiplies, and the causal
// attention's row blocks (the runtime's, at T 512) against one full-width product per head; each
// group's BLAS time per step both ways, with the step's whole BLAS time beside it (2 threads;
// openblas-debian and mkl-bf16 unless --only). Writes bench/results/blas-fusion-<cpu kind>-<date>.md/.json.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuKind } from '../../scripts/bench/cpu-kind.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const args = process.argv.slice(2);
const argValue = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const ROUNDS = Number(argValue('--rounds', '3'));
const MIN_SECONDS = Number(argValue('--min-seconds', '0.06'));
const BF16 = args.includes('--bf16');
const THREADS = argValue('--threads', BF16 ? '2' : '2,1')
  .split(',')
  .map(Number);
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
function candidates(all = false) {
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
    // bf16 × bf16 → fp32 (--bf16).
    {
      name: 'mkl-bf16',
      kind: 'mkl-bf16',
      bf16: true,
      file: path.join(pyLib, 'libmkl_rt.so.3'),
      source: `PyPI mkl==${PYPI.mkl} (cblas_gemm_bf16bf16f32, GNU OpenMP threading layer)`,
      env: { MKL_CBWR: 'AUTO' },
    },
    {
      // The same without AMX: what AVX512-BF16's dot products alone give.
      name: 'mkl-bf16-avx512',
      kind: 'mkl-bf16',
      bf16: true,
      file: path.join(pyLib, 'libmkl_rt.so.3'),
      source: `PyPI mkl==${PYPI.mkl} (cblas_gemm_bf16bf16f32, held to AVX512-BF16: no AMX)`,
      env: { MKL_CBWR: 'AUTO', MKL_ENABLE_INSTRUCTIONS: 'AVX512_E3' },
    },
    {
      name: 'onednn-bf16',
      kind: 'onednn-bf16',
      bf16: true,
      file: debianLib('libdnnl.so.2'),
      source: 'Debian libdnnl2 (matmul primitive, bf16 source and weights, f32 destination, sum post-op for C +=)',
      env: {},
    },
    {
      name: 'onednn-bf16-avx512',
      kind: 'onednn-bf16',
      bf16: true,
      file: debianLib('libdnnl.so.2'),
      source: 'Debian libdnnl2 (matmul primitive, held to AVX512-BF16 by DNNL_MAX_CPU_ISA: no AMX)',
      env: { DNNL_MAX_CPU_ISA: 'AVX512_CORE_BF16' },
    },
    {
      name: 'onednn-gemm-bf16',
      kind: 'onednn-gemm-bf16',
      bf16: true,
      file: debianLib('libdnnl.so.2'),
      source: 'Debian libdnnl2 (dnnl_gemm_bf16bf16f32: exported, not in the public header)',
      env: {},
    },
  ].filter((c) =>
    all
      ? true
      : ONLY
        ? ONLY.split(',').includes(c.name)
        : BF16
          ? c.name === 'openblas-debian' || (c.bf16 && !c.name.startsWith('onednn-bf16-'))
          : !c.bf16,
  );
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
  const mkl = candidates(true).find((c) => c.name === 'mkl');
  const shim = compile('mkl_preload.c', path.join(work, 'mkl_preload.so'), ['-shared', '-fPIC']);
  const steps = Number(argValue('--steps', '3'));
  const names = argValue('--configs', 'gpt2-124m-t128-b8').split(',');
  const chosen = CONFIGS.filter((c) => names.includes(c.name));
  const variants = [
    { name: 'openblas-debian', env: runtimeCoreType() },
    { name: 'mkl', env: { LD_PRELOAD: shim, FSDP_BLAS_PRELOAD_MKL: mkl.file } },
    // --bf16: every product in bf16 through MKL, its operands rounded per product (mkl_preload.c).
    ...(BF16
      ? [{ name: 'mkl-bf16', env: { LD_PRELOAD: shim, FSDP_BLAS_PRELOAD_MKL: mkl.file, FSDP_BLAS_PRELOAD_BF16: '1' } }]
      : []),
  ];
  const loadStart = os.loadavg();
  const started = new Date();
  const rows = [];
  for (const c of chosen) {
    const config = runConfig(c, steps);
    const cpu = Object.fromEntries(variants.map((v) => [v.name, []]));
    const losses = Object.fromEntries(variants.map((v) => [v.name, []]));
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
        if (round === 0) losses[v.name] = events.filter((e) => e.type === 'step').map((e) => e.loss);
      }
    }
    const base = median(cpu['openblas-debian']);
    rows.push({
      config: c.name,
      steps_measured: cpu['openblas-debian'].length,
      step_cpu_s: Object.fromEntries(variants.map((v) => [v.name, median(cpu[v.name])])),
      all_step_cpu_s: cpu,
      // The first round's losses, every step: the same data and initialisation under each library.
      losses,
      speedup_cpu: Object.fromEntries(variants.map((v) => [v.name, base / median(cpu[v.name])])),
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

| configuration | steps | ${variants.map((v) => `${v.name} CPU s / step | speed-up (CPU)`).join(' | ')} |
|---|---|${variants.map(() => '---|---').join('|')}|
${rows.map((r) => `| ${r.config} | ${r.steps_measured} each | ${variants.map((v) => `${r.step_cpu_s[v.name].toFixed(2)} | ${r.speedup_cpu[v.name].toFixed(2)}×`).join(' | ')} |`).join('\n')}
${
  BF16
    ? `
mkl-bf16: ${mkl.source} with FSDP_BLAS_PRELOAD_BF16=1 — every product's two fp32 operands rounded to bf16
(vcvtneps2bf16, per product: no bf16 weight copy kept) and multiplied by cblas_gemm_bf16bf16f32 into
fp32; everything else in the step (parameters, gradients, AdamW, the other layers) fp32 as before.

Losses of each step (first round; the same data and initialisation):

| configuration | ${variants.map((v) => v.name).join(' | ')} |
|---|${variants.map(() => '---').join('|')}|
${rows.map((r) => `| ${r.config} | ${variants.map((v) => r.losses[v.name].map((l) => l.toFixed(4)).join(', ')).join(' | ')} |`).join('\n')}
`
    : ''
}`;
  const stem = path.join(
    root,
    'bench',
    'results',
    `blas-end-to-end-${BF16 ? 'bf16-' : ''}${result.cpu.kind}-${result.date.slice(0, 10)}${TAG ? `-${TAG}` : ''}`,
  );
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
  return {
    library: lines[0].library,
    convert: lines[0].convert,
    byKey: new Map(lines.slice(1).map((s) => [shapeKey(s), s])),
  };
}

// ---- fewer, larger products (--fusion) -----------------------------------------------------------

/** A row-major product's description as shapes.json holds it; leading dimensions those of dense operands. */
const product = (ta, tb, m, n, k, betaZero, inParallel = 0, ld = {}) => ({
  ta,
  tb,
  m,
  n,
  k,
  lda: ld.lda ?? (ta ? m : k),
  ldb: ld.ldb ?? (tb ? k : n),
  ldc: ld.ldc ?? n,
  beta_zero: betaZero,
  in_parallel: inParallel,
});

/** Per recorded configuration: groups of one step's products that are one product in the runtime, or could be,
 * each as the fused shape(s) and the separate ones, with the calls per step. */
function fusionGroups(shapes) {
  const groups = [];
  for (const c of shapes.configs) {
    const model = MODELS[c.arch];
    const n = c.seq * c.batch;
    const d = model.d_model;
    const headDim = d / model.n_heads;
    const kv = (model.n_kv_heads ?? model.n_heads) * headDim;
    const recorded = shapes.shapes[c.name];
    const find = (ta, tb, m, nn, k, inParallel = 0) =>
      recorded.filter(
        (s) => s.ta === ta && s.tb === tb && s.m === m && s.n === nn && s.k === k && s.in_parallel === inParallel,
      );
    const one = (what, dims) => {
      const found = find(...dims);
      if (found.length !== 1)
        throw new Error(
          `bench:blas: ${c.name}: ${found.length} recorded products ${dims.join(' ')} (${what}), expected one: shapes.json is not this runtime's (record it again: --record)`,
        );
      return found[0];
    };
    const add = (what, fused, separate, now) => groups.push({ config: c.name, what, now, fused, separate });
    const widths = [d, kv, kv]; // q, k, v
    const w = d + 2 * kv;
    let f = one('q | k | v forward', [0, 1, n, w, d]);
    add(
      'q, k, v projections (forward)',
      [f],
      widths.map((x) => ({ ...product(0, 1, n, x, d, f.beta_zero), calls: f.calls })),
      'fused',
    );
    f = one('q | k | v input gradient', [0, 0, n, d, w]);
    add(
      'q, k, v: input gradient (the three summed)',
      [f],
      widths.map((x, i) => ({ ...product(0, 0, n, d, x, i === 0 ? f.beta_zero : 0), calls: f.calls })),
      'fused',
    );
    f = one('q | k | v weight gradient', [1, 0, w, d, n]);
    add(
      'q, k, v: weight gradients',
      [f],
      widths.map((x) => ({ ...product(1, 0, x, d, n, f.beta_zero), calls: f.calls })),
      'fused',
    );
    if (c.arch === 'llama') {
      const ff = model.intermediate_size;
      f = one('gate | up forward', [0, 1, n, 2 * ff, d]);
      add(
        'MLP gate, up (forward)',
        [f],
        [0, 1].map(() => ({ ...product(0, 1, n, ff, d, f.beta_zero), calls: f.calls })),
        'fused',
      );
      f = one('gate | up input gradient', [0, 0, n, d, 2 * ff]);
      add(
        'MLP gate, up: input gradient (the two summed)',
        [f],
        [0, 1].map((i) => ({ ...product(0, 0, n, d, ff, i === 0 ? f.beta_zero : 0), calls: f.calls })),
        'fused',
      );
      f = one('gate | up weight gradient', [1, 0, 2 * ff, d, n]);
      add(
        'MLP gate, up: weight gradients',
        [f],
        [0, 1].map(() => ({ ...product(1, 0, ff, d, n, f.beta_zero), calls: f.calls })),
        'fused',
      );
    }
    // Causal attention in row blocks (what the runtime does at T 512: the masked upper triangle skipped) against one
    // T × T product per (sequence, head) that computes it too.
    const scores = recorded.filter((s) => s.in_parallel && s.ta === 0 && s.tb === 1 && s.k === headDim && s.lda === w);
    if (scores.length > 1) {
      const t = c.seq;
      add(
        `attention scores q kᵀ per (sequence, head): one ${t}×${t} product instead of ${scores.length} row blocks`,
        [
          {
            ...product(0, 1, t, t, headDim, 1, 1, { lda: w, ldb: w, ldc: t }),
            calls: scores[0].calls,
          },
        ],
        scores,
        'separate',
      );
      const pv = recorded.filter(
        (s) => s.in_parallel && s.ta === 0 && s.tb === 0 && s.m === scores[0].m && s.n === headDim && s.ldc === d,
      );
      add(
        `attention p v per (sequence, head): one ${t}×${headDim}×${t} product instead of ${pv.length} row blocks`,
        [{ ...product(0, 0, t, headDim, t, 1, 1, { lda: t, ldb: w, ldc: d }), calls: pv[0].calls }],
        pv,
        'separate',
      );
    }
  }
  return groups;
}

function fusion() {
  const shapes = JSON.parse(readFileSync(SHAPES_FILE, 'utf8'));
  const groups = fusionGroups(shapes);
  const cands = ONLY ? candidates() : candidates(true).filter((c) => ['openblas-debian', 'mkl-bf16'].includes(c.name));
  if (cands.some((c) => c.source.startsWith('PyPI'))) ensurePypiCandidates();
  const bench = compile('gemm_bench.c', path.join(work, 'gemm_bench'), []);
  const stepKeys = Object.values(shapes.shapes).flatMap((list) => list.map(shapeKey));
  const groupKeys = groups.flatMap((g) => [...g.fused, ...g.separate].map(shapeKey));
  const keys = [...new Set([...stepKeys, ...groupKeys])];
  const threads = THREADS[0];
  const loadStart = os.loadavg();
  const started = new Date();
  const perCall = Object.fromEntries(cands.map((c) => [c.name, {}])); // [candidate][key] -> cpu s per call, rounds
  const libraries = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cands) {
      log(`--fusion, round ${round + 1}/${ROUNDS}: ${c.name} (load ${os.loadavg()[0].toFixed(1)})`);
      const m = measure(bench, c, threads, keys);
      libraries[c.name] = m.library;
      for (const [key, s] of m.byKey) (perCall[c.name][key] ??= []).push(s.cpu_s_per_call);
    }
  }
  const loadEnd = os.loadavg();
  const time = (cand, list) => list.reduce((sum, s) => sum + s.calls * median(perCall[cand][shapeKey(s)]), 0);
  const rows = groups.map((g) => ({
    config: g.config,
    what: g.what,
    runtime_now: g.now,
    fused: g.fused.map(shapeKey),
    separate: g.separate.map(shapeKey),
    calls_per_step: g.fused[0].calls,
    cpu_s_per_step: Object.fromEntries(
      cands.map((c) => [c.name, { fused: time(c.name, g.fused), separate: time(c.name, g.separate) }]),
    ),
  }));
  const stepBlas = Object.fromEntries(
    Object.entries(shapes.shapes).map(([config, list]) => [
      config,
      Object.fromEntries(cands.map((c) => [c.name, time(c.name, list)])),
    ]),
  );
  const result = {
    date: started.toISOString(),
    command: `npm run bench:blas -- ${args.join(' ')}`.trim(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim(),
    cpu: cpuKind(),
    threads,
    load_average: { start: loadStart, end: loadEnd },
    rounds: ROUNDS,
    candidates: cands.map((c) => ({ name: c.name, source: c.source, env: c.env, library: libraries[c.name] })),
    step_blas_cpu_s: stepBlas,
    groups: rows,
  };
  const fmt3 = (x) => x.toFixed(3);
  const loadMd = (l) => l.map((x) => x.toFixed(1)).join(' / ');
  const table = rows
    .map((r) => {
      const cells = cands.map((c) => {
        const t = r.cpu_s_per_step[c.name];
        const saved = t.separate - t.fused;
        return `${fmt3(t.separate)} | ${fmt3(t.fused)} | ${(t.separate / t.fused).toFixed(2)}× | ${((100 * saved) / stepBlas[r.config][c.name]).toFixed(1)} %`;
      });
      return `| ${r.config} | ${r.what} | ${r.runtime_now} | ${r.calls_per_step} × (${r.separate.length} → ${r.fused.length}) | ${cells.join(' | ')} |`;
    })
    .join('\n');
  const md = `# Fewer, larger products: fused against separate at the runtime's shapes — ${result.cpu.kind} (${result.date.slice(0, 10)})

Command: \`${result.command}\` at ${result.commit}. CPU: ${result.cpu.model} (family ${result.cpu.family}, model ${result.cpu.model_number}), ${threads} threads, shared.
Load average (1 / 5 / 15 min): ${loadMd(loadStart)} at the start, ${loadMd(loadEnd)} at the end.

Each group is products of one training step (bench/blas/shapes.json) that are one product or could be:
"separate" is what an unfused model multiplies (q, k and v, or gate and up, one product each, dense
operands), "fused" one product over the concatenated weight. "now" says which the runtime runs. Timed by
bench/blas/gemm_bench.c as \`npm run bench:blas\` times them (OMP_WAIT_POLICY=passive, attention's
products inside an OpenMP loop), ${ROUNDS} rounds interleaved, medians of CPU seconds per call × calls
per step. "of the step" = (separate − fused) / the step's whole BLAS CPU time with that library (same run).

Candidates:
${result.candidates.map((c) => `- **${c.name}**: ${c.source} — ${c.library}`).join('\n')}

Step's BLAS CPU s: ${Object.entries(stepBlas)
    .map(([config, t]) => `${config} ${cands.map((c) => `${c.name} ${fmt3(t[c.name])}`).join(', ')}`)
    .join('; ')}.

| config | products | runtime now | calls/step × (separate → fused) | ${cands.map((c) => `${c.name}: separate CPU s | fused CPU s | separate / fused | saved, of the step`).join(' | ')} |
|---|---|---|---|${cands.map(() => '---|---|---|---').join('|')}|
${table}
`;
  const stem = path.join(
    root,
    'bench',
    'results',
    `blas-fusion-${result.cpu.kind}-${result.date.slice(0, 10)}${TAG ? `-${TAG}` : ''}`,
  );
  writeFileSync(`${stem}.json`, JSON.stringify(result, null, 1) + '\n');
  writeFileSync(`${stem}.md`, md);
  log(`wrote ${stem}.md and .json`);
}

if (args.includes('--record') || !existsSync(SHAPES_FILE)) recordShapes();
if (args.includes('--end-to-end')) {
  endToEnd();
  process.exit(0);
}
if (args.includes('--fusion')) {
  fusion();
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
// Whether an OpenBLAS candidate has a bf16 GEMM (sbgemm, built only with BUILD_BFLOAT16).
const sbgemm = BF16
  ? candidates(true)
      .filter((c) => c.kind === 'openblas' || c.kind === 'scipy-openblas')
      .filter((c) => existsSync(c.file))
      .map((c) => ({
        name: c.name,
        file: c.file,
        sbgemm: execFileSync('nm', ['-D', '--defined-only', c.file], { encoding: 'utf8', maxBuffer: 64 << 20 })
          .split('\n')
          .some((l) => /\bsbgemm/.test(l)),
      }))
  : [];
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
      libraries[c.name] = m.library + (c.bf16 ? `; operands rounded to bf16 by ${m.convert}` : '');
      for (const [key, s] of m.byKey) {
        const slot = (samples[threads][c.name][key] ??= { cpu: [], wall: [], convert: [], error: 0 });
        slot.cpu.push(s.cpu_s_per_call);
        slot.wall.push(s.wall_s_per_call);
        // Rounding both fp32 operands to bf16, per product (0 for the fp32 candidates).
        slot.convert.push((s.convert_a_cpu_s_per_call ?? 0) + (s.convert_b_cpu_s_per_call ?? 0));
        if (s.impl) slot.impl = s.impl === s.impl_beta1 ? s.impl : `${s.impl} / ${s.impl_beta1}`;
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
        convertS = 0,
        worstError = 0;
      const perShape = list.map((s) => {
        const m = samples[threads][c.name][shapeKey(s)];
        const cpuPer = median(m.cpu),
          wallPer = median(m.wall);
        cpuS += s.calls * cpuPer;
        wallS += s.calls * wallPer;
        convertS += s.calls * median(m.convert);
        worstError = Math.max(worstError, m.error);
        return {
          shape: shapeKey(s),
          calls: s.calls,
          cpu_s_per_call: cpuPer,
          gflops_per_cpu_s: flops(s) / cpuPer / 1e9,
          ...(c.bf16 ? { convert_cpu_s_per_call: median(m.convert) } : {}),
          ...(m.impl ? { impl: m.impl } : {}),
        };
      });
      // Per round (the candidates run one after another within a round): the step's BLAS CPU time.
      const roundsCpuS = Array.from({ length: ROUNDS }, (_, r) =>
        list.reduce((sum, s) => sum + s.calls * samples[threads][c.name][shapeKey(s)].cpu[r], 0),
      );
      const roundsConvertS = Array.from({ length: ROUNDS }, (_, r) =>
        list.reduce((sum, s) => sum + s.calls * samples[threads][c.name][shapeKey(s)].convert[r], 0),
      );
      return {
        candidate: c.name,
        step_blas_cpu_s: cpuS,
        step_blas_wall_s: wallS,
        rounds_cpu_s: roundsCpuS,
        ...(c.bf16 ? { step_convert_cpu_s: convertS, rounds_convert_cpu_s: roundsConvertS } : {}),
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
  ...(BF16 ? { sbgemm } : {}),
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
const candidatesMd = result.candidates
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
  .join('\n');

/** --bf16's tables: per configuration, each candidate's products alone and with the rounding of their operands. */
function bf16Tables() {
  return results
    .map(({ config, threads, rows }) => {
      const ref = rows.find((r) => r.candidate === base) ?? rows[0];
      const total = (r) => r.step_blas_cpu_s + (r.step_convert_cpu_s ?? 0);
      const roundsTotal = (r) => r.rounds_cpu_s.map((v, i) => v + (r.rounds_convert_cpu_s?.[i] ?? 0));
      const paired = (r) => {
        const x = roundsTotal(r).map((v, i) => ref.rounds_cpu_s[i] / v);
        return `${fmt(median(x), 2)}× (${fmt(Math.min(...x), 2)}–${fmt(Math.max(...x), 2)})`;
      };
      const head = `### ${config}, ${threads} thread${threads > 1 ? 's' : ''}\n\n| GEMM | products CPU s / step | wall s / step | rounding operands to bf16, CPU s / step | products + rounding | vs ${ref.candidate} fp32: products alone | with rounding | same-round ratios with rounding: median (min–max) | worst rel. error vs fp32 operands |\n|---|---|---|---|---|---|---|---|---|`;
      const body = rows
        .map(
          (r) =>
            `| ${r.candidate} | ${fmt(r.step_blas_cpu_s)} | ${fmt(r.step_blas_wall_s)} | ${r.step_convert_cpu_s === undefined ? '—' : fmt(r.step_convert_cpu_s)} | ${fmt(total(r))} | ${fmt(ref.step_blas_cpu_s / r.step_blas_cpu_s, 2)}× | ${fmt(ref.step_blas_cpu_s / total(r), 2)}× | ${paired(r)} | ${r.max_rel_error.toExponential(1)} |`,
        )
        .join('\n');
      const big = [...ref.per_shape]
        .map((s, i) => ({ ...s, i, t: s.calls * s.cpu_s_per_call }))
        .sort((a, b) => b.t - a.t)
        .slice(0, 6);
      const shapeHead = `\n\nLargest shapes by ${ref.candidate}'s time (ta tb m n k lda ldb ldc beta0 in_parallel; calls/step), GFLOP/s per CPU-second of the product alone:\n\n| shape | calls | ${rows.map((r) => r.candidate).join(' | ')} |\n|---|---|${rows.map(() => '---').join('|')}|`;
      const shapeRows = big
        .map(
          (s) =>
            `| ${s.shape} | ${s.calls} | ${rows.map((r) => fmt(r.per_shape[s.i].gflops_per_cpu_s, 0)).join(' | ')} |`,
        )
        .join('\n');
      // oneDNN names the implementation it picked per shape: whether AMX ran.
      const impls = rows
        .filter((r) => r.per_shape.some((s) => s.impl))
        .map((r) => {
          const byImpl = {};
          for (const s of r.per_shape) {
            const t = (byImpl[s.impl] ??= { shapes: 0, cpu: 0 });
            t.shapes += 1;
            t.cpu += s.calls * s.cpu_s_per_call;
          }
          return `- ${r.candidate}'s implementations: ${Object.entries(byImpl)
            .map(
              ([impl, t]) =>
                `\`${impl}\` ${t.shapes} shapes, ${fmt((100 * t.cpu) / r.step_blas_cpu_s, 0)} % of its time`,
            )
            .join('; ')}`;
        })
        .join('\n');
      return `${head}\n${body}${shapeHead}\n${shapeRows}${impls ? `\n\n${impls}` : ''}`;
    })
    .join('\n\n');
}

const bf16Md =
  () => `# bf16 GEMM (bf16 operands, fp32 accumulation and output) at the runtime's shapes — ${cpu.kind} (${result.date.slice(0, 10)})

Command: \`${result.command}\` at ${result.commit}. CPU: ${cpu.model} (family ${cpu.family}, model ${cpu.model_number}${cpu.bf16 ? ', AVX512-BF16' : ''}${cpu.amx ? ', AMX' : ''}), ${result.cores} cores, shared.
Load average (1 / 5 / 15 min): ${loadMd(loadStart)} at the start, ${loadMd(loadEnd)} at the end.

Every product of one training step (bench/blas/shapes.json, recorded from the runtime's cblas_sgemm
calls) with bfloat16 A and B and float32 C (C = or C +=, as recorded), what mixed precision's matrix
products are, beside the fp32 products of Debian's OpenBLAS (the runtime's BLAS) as the baseline. One
program (bench/blas/gemm_bench.c) loads each library with dlopen; OMP_WAIT_POLICY=passive; attention's
products from inside an OpenMP loop as the runtime calls them. Candidates interleaved, ${ROUNDS} rounds,
medians. "products CPU s / step" = Σ calls × median CPU s per call (all threads). "rounding operands"
= rounding both fp32 operands of every product to bf16 (AVX512-BF16's vcvtneps2bf16 on the OpenMP
threads), what a runtime with fp32 master weights and fp32 activations would pay at most: a bf16 copy
of each weight made once per step, or activations written in bf16 by the kernel before, would pay less.
The error is the largest of 16 entries' |C − exact| / Σ|a·b| against the fp32 operands.

Candidates:
${candidatesMd}

OpenBLAS's bf16 GEMM (sbgemm): ${sbgemm.map((x) => `${x.name} ${x.sbgemm ? 'exports it' : 'does not export it'} (\`nm -D ${x.file}\`)`).join('; ') || 'no OpenBLAS candidate found'}.

${bf16Tables()}
`;

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
${candidatesMd}

${tables}
`;

const out = path.join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const stem = path.join(
  out,
  `blas-${BF16 ? 'bf16-' : ''}${cpu.kind}-${result.date.slice(0, 10)}${TAG ? `-${TAG}` : ''}`,
);
writeFileSync(`${stem}.json`, JSON.stringify(result, null, 1) + '\n');
writeFileSync(`${stem}.md`, BF16 ? bf16Md() : md);
log(`wrote ${stem}.md and .json`);
