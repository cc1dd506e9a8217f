// `npm run bench:cpu`: the native runtime's speed on this machine's CPU, beside PyTorch 2.
//  1. The BLAS kernels the runtime chose (native/src/runtime/blas_kernels.h) and the OpenBLAS sgemm
//     peak (2048³, the run's threads), measured before and after: MFU's denominator.
//  2. samples/tiny-cpu.yaml: tokens/s, MFU, and the wall-clock time from the start of `fsdp-train`
//     to a validation loss below the corpus's unigram entropy.
//  3. Side by side, one model (GPT-2 124M shape: V 50257, d 768, 12 layers, 12 heads), fp32, AdamW,
//     the same batch and thread count: the native runtime, PyTorch 2 eager and torch.compile
//     (inductor, CPU) — scripts/bench/cpu_pytorch.py, the runtime's GPT in PyTorch with SDPA. At
//     T 128 micro-batch 8, and at T 512 micro-batch 2 with activation checkpointing none and every
//     layer. Interleaved (native, eager, compile, repeat) so a shared machine's load falls on all
//     three alike; medians of each one's steps after its warm-up.
//     The Llama family's row (issue 35 item 6): SmolLM2-135M's shape (V 49152, d 576, 30 layers, 9
//     heads, 3 key-value heads, intermediate 1536, rope_theta 100000, tied) at T 512 micro-batch 1,
//     beside transformers' LlamaForCausalLM (random init, float32, SDPA, AdamW) eager and compiled;
//     the native side reads the Llama sample's token files (samples/prepare-llama-data.ts; ids < 8192).
//  4. Where the time goes: the native runtime's steps sampled by `perf` (cpu-clock) and grouped by
//     what they do; PyTorch eager's ops from torch.profiler.
// Writes bench/results/cpu-<cpu kind>-<date>.json and .md (kind: scripts/bench/cpu-kind.mjs, e.g.
// amd-avx512) with the machine, the load and this command: one file per CPU kind (issue 42 item 4).
//
// The machine is shared, so each speed is given twice: by the wall clock, and by the CPU time the
// process used (the step event's cpu_ms; time.process_time() in PyTorch), which is what the same
// work takes on cores nobody else uses. The targets (issue 24): native >= 1.5x eager and >= 1.3x
// torch.compile at T 128; the Llama row's (issue 35): >= 1.3x torch.compile by CPU time. Both processes run with OMP_WAIT_POLICY=passive (the runtime's default).
// The load average (1, 5, 15 minutes) and this process's nice value are recorded with the figures.
//
//   npm run bench:cpu [-- --rounds N] [--steps N] [--only NAME-PART] [--tiny] [--no-profile]
//                     [--no-compile | --compile-timeout SECONDS] [--peak-runs N] [--bf16-autocast | --bf16]
// --rounds: rounds at T 128 (default 3; the T 512 ones take at most 2). --steps: measured steps per
// round (default 2 at T 128, 1 at T 512). --only: the configurations whose name holds it (e.g. t128).
// --tiny adds samples/tiny-cpu.yaml. --no-profile leaves out perf and torch.profiler. torch.compile
// is given --compile-timeout seconds (default 1800) for its compile and warm-up: past that, on a
// loaded machine, it is recorded as not measured (and why) instead of holding up the rest.
// --peak-runs: the sgemm peak is the best of N runs (default 3), before and after.
// --bf16-autocast (issue 42 item 2): a fourth runner in every round, PyTorch eager with its forward
// and loss under torch.autocast('cpu', dtype=torch.bfloat16) — PyTorch's CPU mixed precision (bf16
// products through oneDNN, AMX where the CPU has it; fp32 weights and AdamW) — beside the fp32 ones.
// Its results go to bench/results/cpu-bf16-<cpu kind>-<date>.md and .json.
// --bf16 (issue 42 item 2's side by side): --bf16-autocast plus the native runtime in bf16 (the same
// config with mixed_precision.param_dtype bfloat16: bf16 products, fp32 weights and AdamW), so each
// round runs native fp32, native bf16, eager fp32 and eager bf16; each runner's GEMM is named (the
// native run_start's runtime.gemm). Where the runtime refuses bf16 on this CPU (no oneDNN, no AMX),
// its row gives the runtime's reason (--probe's cpu_gemm.bfloat16.bf16_refusal) and the rest runs.
// Its results go to bench/results/cpu-bf16-native-<cpu kind>-<date>.md and .json.
// --model-shape D,LAYERS,HEADS: another width and depth (vocabulary 50257, the data's), to check the
// benchmark itself in a minute; its results are not GPT-2 124M's.
// A short run on a loaded machine: npm run bench:cpu -- --rounds 1 --steps 1 --only t128 --no-profile
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { setup, root } from '../setup/index.mjs';
import { cpuKind } from './cpu-kind.mjs';
import { load, median, provenance, scratchFolder, train as trainIn, writeResults } from './native-bench.mjs';

const args = process.argv.slice(2);
const argValue = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const positiveInt = (name, fallback) => {
  const v = Number(argValue(name, String(fallback)));
  if (!Number.isInteger(v) || v < 1)
    throw new Error(`bench:cpu: ${name} wants a whole number ≥ 1, got ${argValue(name, '')}`);
  return v;
};
const ROUNDS = positiveInt('--rounds', 3);
const STEPS = args.includes('--steps') ? positiveInt('--steps', 1) : undefined;
const ONLY = argValue('--only', '');
const TINY = args.includes('--tiny');
const PROFILE = !args.includes('--no-profile');
const COMPILE = !args.includes('--no-compile');
const COMPILE_TIMEOUT_S = positiveInt('--compile-timeout', 1800);
const PEAK_RUNS = positiveInt('--peak-runs', 3);
const NATIVE_BF16 = args.includes('--bf16');
const AUTOCAST = NATIVE_BF16 || args.includes('--bf16-autocast');
const THREADS = 2;
const [D_MODEL, N_LAYERS, N_HEADS] = argValue('--model-shape', '768,12,12').split(',').map(Number);
if (![D_MODEL, N_LAYERS, N_HEADS].every((x) => Number.isInteger(x) && x >= 1) || D_MODEL % N_HEADS) {
  throw new Error(
    `bench:cpu: --model-shape wants D,LAYERS,HEADS (whole numbers, D a multiple of HEADS), got ${argValue('--model-shape', '')}`,
  );
}
const SHAPE =
  D_MODEL === 768 && N_LAYERS === 12 && N_HEADS === 12
    ? 'GPT-2 124M shape'
    : `d ${D_MODEL}, ${N_LAYERS} layers, ${N_HEADS} heads (NOT GPT-2 124M: --model-shape)`;

await setup('start', { codeServer: false });
const native = path.join(root, 'native', 'build', 'Release', 'fsdp-train-native');
const python = path.join(root, '.venv', 'bin', 'python');
const worker = path.join(root, 'scripts', 'bench', 'cpu_pytorch.py');
const data = path.join(root, 'samples', 'data');
const work = scratchFolder('cpu');
const train = (configFile, extraArgs) => trainIn(work, configFile, extraArgs);
// Inductor compiles in this process (no pool of compile workers): on 2 shared cores a pool gains
// nothing, and a compile cut short by --compile-timeout then leaves no process behind.
const benchEnv = {
  ...process.env,
  OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive',
  OMP_NUM_THREADS: String(THREADS),
  TORCHINDUCTOR_COMPILE_THREADS: process.env.TORCHINDUCTOR_COMPILE_THREADS ?? '1',
};
const loads = () => os.loadavg().map((x) => +x.toFixed(2));
const log = (msg) =>
  console.error(`bench:cpu: ${new Date().toISOString().slice(11, 19)} ${msg} (load ${load().toFixed(1)})`);

function sgemmPeak() {
  // Best of PEAK_RUNS: the peak this BLAS reaches on these cores under the load of the moment (it raises the runtime's cached peak too).
  const runs = Array.from({ length: PEAK_RUNS }, () =>
    JSON.parse(execFileSync(native, ['--sgemm-peak', '2048'], { encoding: 'utf8', env: benchEnv })),
  );
  return { wall: Math.max(...runs.map((r) => r.flops)), cpu: Math.max(...runs.map((r) => r.cpu_flops)) };
}

function writeConfig(name, config) {
  const file = path.join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify({ name, ...config }, null, 2));
  return file;
}

const gpt2Model = { d_model: D_MODEL, n_layers: N_LAYERS, n_heads: N_HEADS, vocab_size: 50257, max_seq_len: 1024 };
/** extra: more top-level keys (the native bf16 runner's mixed_precision). */
function gpt2Config(name, seqLen, batch, steps, checkpointing, extra = {}) {
  return writeConfig(name, {
    model: gpt2Model,
    data: { train: path.join(data, 'fortunes-gpt2-train.tok'), seq_len: seqLen },
    training: { batch_size_per_gpu: batch, max_steps: steps, learning_rate: 0.0006, warmup_steps: 2 },
    fsdp: { sharding_strategy: 'NO_SHARD' },
    checkpointing: { save_final: false },
    activation_checkpointing:
      checkpointing === 'every-1' ? { enabled: true, policy: 'every_n', every_n_layers: 1 } : { enabled: false },
    launch: { threads_per_rank: THREADS },
    logging: { tensorboard: false },
    ...extra,
  });
}

// SmolLM2-135M's published shape (its config.json), random init.
const smollm2Model = {
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
};
function llamaConfig(name, seqLen, batch, steps, checkpointing, extra = {}) {
  return writeConfig(name, {
    model: smollm2Model,
    data: { train: path.join(data, 'fortunes-bpe', 'train.tok'), seq_len: seqLen },
    training: { batch_size_per_gpu: batch, max_steps: steps, learning_rate: 0.0006, warmup_steps: 2 },
    fsdp: { sharding_strategy: 'NO_SHARD' },
    checkpointing: { save_final: false },
    activation_checkpointing:
      checkpointing === 'every-1' ? { enabled: true, policy: 'every_n', every_n_layers: 1 } : { enabled: false },
    launch: { threads_per_rank: THREADS },
    logging: { tensorboard: false },
    ...extra,
  });
}
const modelConfig = (c, ...rest) => (c.arch === 'llama' ? llamaConfig : gpt2Config)(...rest);
const BF16_CONFIG = { mixed_precision: { param_dtype: 'bfloat16' } };
/** Why the native runtime will not run bf16 products on this CPU (its --probe), or undefined when it will. */
function nativeBf16Refusal(probe) {
  const bf16 = probe.cpu_gemm?.bfloat16;
  if (!bf16) return 'this runtime build reports no cpu_gemm in --probe (it predates CPU bf16)';
  return bf16.bf16_available ? undefined : `the runtime refuses bf16 on this CPU: ${bf16.bf16_refusal}`;
}

/** The model's arguments to cpu_pytorch.py. */
function workerModelArgs(c) {
  if (c.arch === 'llama') {
    const m = smollm2Model;
    return [
      '--arch',
      'llama',
      '--d-model',
      String(m.d_model),
      '--layers',
      String(m.n_layers),
      '--heads',
      String(m.n_heads),
      '--kv-heads',
      String(m.n_kv_heads),
      '--intermediate',
      String(m.intermediate_size),
      '--rope-theta',
      String(m.rope_theta),
      '--vocab',
      String(m.vocab_size),
    ];
  }
  return ['--d-model', String(D_MODEL), '--layers', String(N_LAYERS), '--heads', String(N_HEADS), '--vocab', '50257'];
}

/** A PyTorch process kept alive across rounds (cpu_pytorch.py): it compiles once, then steps when asked. */
class PyTorchWorker {
  constructor(mode, c, extraArgs = []) {
    this.mode = [mode, ...extraArgs].join(' '); // for its errors
    this.child = spawn(
      python,
      [
        worker,
        '--mode',
        mode,
        '--batch',
        String(c.batch),
        '--seq',
        String(c.seq),
        '--threads',
        String(THREADS),
        '--checkpointing',
        c.checkpointing,
        '--warmup',
        '1',
        ...workerModelArgs(c),
        ...extraArgs,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'], env: benchEnv },
    );
    this.child.stdin.on('error', () => {}); // a worker killed at its timeout no longer reads
    this.stderr = '';
    this.child.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    this.lines = readline.createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }
  async next() {
    const { value, done } = await this.lines.next();
    if (done) throw new Error(`PyTorch ${this.mode} ended: ${this.stderr}`);
    return JSON.parse(value);
  }
  /** Its {ready} line; undefined when it has not come within timeoutS seconds (the worker is then killed). */
  async ready(timeoutS = Infinity) {
    let timer;
    const timeout = new Promise((resolve) => {
      if (Number.isFinite(timeoutS)) timer = setTimeout(() => resolve(undefined), timeoutS * 1000);
    });
    this.info = await Promise.race([this.next(), timeout]);
    clearTimeout(timer);
    if (!this.info) this.child.kill('SIGKILL');
    return this.info;
  }
  async steps(n) {
    this.child.stdin.write(`steps ${n}\n`);
    const out = [];
    for (let i = 0; i < n; i++) out.push(await this.next());
    return out;
  }
  async profile() {
    this.child.stdin.write('profile\n');
    return (await this.next()).profile;
  }
  quit() {
    this.child.stdin.end('quit\n');
  }
}

/** Steps after the warm-up one, as {wall_s, cpu_s}. */
function nativeSteps(events) {
  return events
    .filter((e) => e.type === 'step')
    .slice(1)
    .map((s) => ({ wall_s: s.step_ms / 1000, cpu_s: s.cpu_ms / 1000, loss: s.loss }));
}

function summary(steps, tokens, flopsPerToken) {
  const wall = median(steps.map((s) => s.wall_s));
  const cpu = median(steps.map((s) => s.cpu_s));
  return {
    steps: steps.length,
    step_s_median: wall,
    step_cpu_s_median: cpu,
    step_s_range: [Math.min(...steps.map((s) => s.wall_s)), Math.max(...steps.map((s) => s.wall_s))],
    tokens_per_s: tokens / wall,
    cpu_tokens_per_s: (tokens / cpu) * THREADS,
    gflops: (tokens * flopsPerToken) / wall / 1e9,
    cpu_gflops: (((tokens * flopsPerToken) / cpu) * THREADS) / 1e9,
  };
}

/** Native, eager and compile on one model config, interleaved round by round. */
async function sideBySide(c) {
  log(
    `${c.name}: starting PyTorch eager${COMPILE ? ` and torch.compile (compiling, at most ${COMPILE_TIMEOUT_S} s)` : ''}…`,
  );
  const eager = new PyTorchWorker('eager', c);
  const eagerBf16 = AUTOCAST ? new PyTorchWorker('eager', c, ['--autocast', 'bf16']) : undefined;
  const compiled = COMPILE ? new PyTorchWorker('compile', c) : undefined;
  // torch.compile under the same autocast: PyTorch's fastest bf16 on a CPU, beside native bf16.
  const compiledBf16 = COMPILE && AUTOCAST ? new PyTorchWorker('compile', c, ['--autocast', 'bf16']) : undefined;
  const compileStarted = Date.now();
  const eagerInfo = await eager.ready();
  const eagerBf16Info = eagerBf16 ? await eagerBf16.ready() : undefined;
  const compileLeft = () => Math.max(1, COMPILE_TIMEOUT_S - (Date.now() - compileStarted) / 1000);
  const compileInfo = compiled ? await compiled.ready(compileLeft()) : undefined;
  const compileBf16Info = compiledBf16 ? await compiledBf16.ready(compileLeft()) : undefined;
  const timedOut = (shared) =>
    `not measured: its compile and warm-up step had not finished after ${COMPILE_TIMEOUT_S} s (--compile-timeout${shared}) at a 1-minute load of ${load().toFixed(1)}; the worker was stopped`;
  const compileNotMeasured = !COMPILE ? 'not run (--no-compile)' : !compileInfo ? timedOut('') : undefined;
  if (compileNotMeasured) log(`${c.name}: torch.compile ${compileNotMeasured}`);
  const compileBf16NotMeasured = compiledBf16 && !compileBf16Info ? timedOut(", shared with fp32's") : undefined;
  if (compileBf16NotMeasured) log(`${c.name}: torch.compile bf16 autocast ${compileBf16NotMeasured}`);
  const runs = { native: [], eager: [], compile: [], eager_bf16: [], native_bf16: [], compile_bf16: [] };
  let nativeBf16NotMeasured = NATIVE_BF16 ? nativeBf16Refusal(probe) : 'not run (no --bf16)';
  if (NATIVE_BF16 && nativeBf16NotMeasured) log(`${c.name}: native bf16 ${nativeBf16NotMeasured}`);
  let startBf16;
  const roundLoads = [];
  let start;
  try {
    for (let r = 0; r < c.rounds; r++) {
      roundLoads.push(load());
      log(`${c.name}: round ${r + 1}/${c.rounds}: native`);
      const n = await train(modelConfig(c, `${c.name}-${r}`, c.seq, c.batch, 1 + c.steps, c.checkpointing));
      start ??= n.events.find((e) => e.type === 'run_start');
      runs.native.push(...nativeSteps(n.events));
      if (!nativeBf16NotMeasured) {
        log(`${c.name}: round ${r + 1}/${c.rounds}: native bf16`);
        const config = modelConfig(c, `${c.name}-bf16-${r}`, c.seq, c.batch, 1 + c.steps, c.checkpointing, BF16_CONFIG);
        try {
          const b = await train(config);
          startBf16 ??= b.events.find((e) => e.type === 'run_start');
          runs.native_bf16.push(...nativeSteps(b.events));
        } catch (e) {
          // The probe said yes but the run failed: its stderr is above; the other runners go on.
          nativeBf16NotMeasured = `not measured: ${e.message}`;
          log(`${c.name}: native bf16 ${nativeBf16NotMeasured}`);
        }
      }
      log(`${c.name}: round ${r + 1}/${c.rounds}: eager`);
      runs.eager.push(...(await eager.steps(c.steps)));
      if (eagerBf16) {
        log(`${c.name}: round ${r + 1}/${c.rounds}: eager bf16 autocast`);
        runs.eager_bf16.push(...(await eagerBf16.steps(c.steps)));
      }
      if (compileInfo) {
        log(`${c.name}: round ${r + 1}/${c.rounds}: compile`);
        runs.compile.push(...(await compiled.steps(c.steps)));
      }
      if (compileBf16Info) {
        log(`${c.name}: round ${r + 1}/${c.rounds}: compile bf16 autocast`);
        runs.compile_bf16.push(...(await compiledBf16.steps(c.steps)));
      }
    }
    roundLoads.push(load());
    const eagerProfile = c.profile && PROFILE ? await eager.profile() : undefined;
    const tokens = c.batch * c.seq;
    const fpt = start.flops_per_token;
    if (!nativeBf16NotMeasured && runs.native_bf16.length === 0) nativeBf16NotMeasured = 'not measured: no steps';
    const result = {
      config: c,
      flops_per_token: fpt,
      n_params: start.n_params,
      mem_peak_native: start.memory_plan.total,
      load_average_1min: { median: median(roundLoads), min: Math.min(...roundLoads), max: Math.max(...roundLoads) },
      native: { ...summary(runs.native, tokens, fpt), gemm: start.runtime?.gemm },
      eager: {
        ...summary(runs.eager, tokens, fpt),
        torch: eagerInfo.torch,
        first_step_s: eagerInfo.first_step_s,
        gemm: eagerInfo.gemm,
      },
      compile: compileInfo
        ? {
            ...summary(runs.compile, tokens, fpt),
            torch: compileInfo.torch,
            first_step_s: compileInfo.first_step_s,
            compile_and_warmup_s: compileInfo.warmup_s,
          }
        : { not_measured: compileNotMeasured },
      ...(eagerBf16Info
        ? {
            eager_bf16: {
              ...summary(runs.eager_bf16, tokens, fpt),
              torch: eagerBf16Info.torch,
              first_step_s: eagerBf16Info.first_step_s,
              autocast: 'torch.autocast("cpu", dtype=torch.bfloat16)',
              gemm: eagerBf16Info.gemm,
            },
          }
        : {}),
      ...(compiledBf16
        ? {
            compile_bf16: compileBf16Info
              ? {
                  ...summary(runs.compile_bf16, tokens, fpt),
                  torch: compileBf16Info.torch,
                  first_step_s: compileBf16Info.first_step_s,
                  compile_and_warmup_s: compileBf16Info.warmup_s,
                  autocast: 'torch.autocast("cpu", dtype=torch.bfloat16)',
                  gemm: compileBf16Info.gemm,
                }
              : { not_measured: compileBf16NotMeasured },
          }
        : {}),
      ...(NATIVE_BF16
        ? {
            native_bf16: nativeBf16NotMeasured
              ? { not_measured: nativeBf16NotMeasured }
              : {
                  ...summary(runs.native_bf16, tokens, fpt),
                  mixed_precision: BF16_CONFIG.mixed_precision,
                  gemm: startBf16?.runtime?.gemm,
                },
          }
        : {}),
      steps: runs,
      ...(eagerProfile ? { eager_profile: eagerProfile } : {}),
    };
    const ratio = (other, key) => result[other][key] / result.native[key];
    const ratios = (other) => ({ wall: ratio(other, 'step_s_median'), cpu: ratio(other, 'step_cpu_s_median') });
    result.native_vs = {
      eager: ratios('eager'),
      ...(compileInfo ? { compile: ratios('compile') } : {}),
      ...(eagerBf16Info ? { eager_bf16: ratios('eager_bf16') } : {}),
    };
    if (NATIVE_BF16 && !nativeBf16NotMeasured) {
      // By CPU time first: the score on a shared machine (wall beside it).
      const over = (a, b) => ({
        cpu: result[a].step_cpu_s_median / result[b].step_cpu_s_median,
        wall: result[a].step_s_median / result[b].step_s_median,
      });
      result.native_bf16_vs = {
        native_fp32: over('native', 'native_bf16'),
        eager_bf16: over('eager_bf16', 'native_bf16'),
        eager_fp32: over('eager', 'native_bf16'),
        ...(compileBf16Info ? { compile_bf16: over('compile_bf16', 'native_bf16') } : {}),
      };
    }
    if (eagerBf16Info)
      result.eager_bf16_speedup_over_fp32 = {
        wall: result.eager.step_s_median / result.eager_bf16.step_s_median,
        cpu: result.eager.step_cpu_s_median / result.eager_bf16.step_cpu_s_median,
      };
    return result;
  } finally {
    eager.quit();
    eagerBf16?.quit();
    if (compileInfo) compiled.quit();
    if (compileBf16Info) compiledBf16.quit();
  }
}

/** What the native runtime's steps spend their CPU time on: perf's cpu-clock samples, grouped. */
const GROUPS = [
  ['matrix products (OpenBLAS sgemm kernel)', /^sgemm_kernel/],
  ['matrix products: packing and scaling (OpenBLAS copies, beta)', /^sgemm_(on|ot|in|it)copy|^sgemm_beta|^sgemm_small/],
  ['matrix products: OpenBLAS threads waiting (sched_yield)', /sched_yield|do_sched_yield|^__schedule$|yield/],
  ['AdamW', /adamw/],
  ['attention (softmax, masks)', /attention/],
  ['LayerNorm', /layernorm/],
  ['GELU', /gelu|tanhf/],
  ['loss (softmax cross-entropy)', /softmax_xent|expf|log/],
  ['embeddings', /embedding/],
  [
    'bias, residual, fills, reductions, copies',
    /bias_|add_|fill|copy|sum_squares|chunked_sum|scale|memset|memcpy|memmove/,
  ],
  ['initialisation (not steps: parameters drawn once)', /init_unit_range|sincos|ieee754_log/],
  ['kernel: page faults, memory mapping', /page|fault|mm_|clear_|alloc|lru|folio|pte|memcg|unmap|mas_/],
];
function profileNative() {
  if (!PROFILE) return { skipped: 'not run (--no-profile)' };
  const perf = spawnSync('perf', ['stat', '-e', 'cpu-clock', 'true'], { encoding: 'utf8' });
  if (perf.status !== 0)
    return {
      skipped: `perf cannot sample here: ${(perf.stderr || perf.error?.message || '').trim().split('\n')[0]} (Debian: apt-get install linux-perf)`,
    };
  const config = gpt2Config('gpt2-124m-t128-profile', 128, 8, 3, 'none');
  const dir = path.join(work, 'profile');
  const data = path.join(work, 'perf.data');
  const rec = spawnSync(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', '499', '-o', data, '--', native, '--config', config, '--run-dir', dir],
    { encoding: 'utf8', env: benchEnv, maxBuffer: 64 * 2 ** 20 },
  );
  if (rec.status !== 0) return { skipped: `perf record failed: ${rec.stderr.trim().split('\n').pop()}` };
  const report = spawnSync(
    'perf',
    ['report', '-i', data, '--no-children', '--sort', 'symbol', '--stdio', '-q', '-g', 'none'],
    { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 },
  );
  const symbols = [];
  for (const line of report.stdout.split('\n')) {
    const m = /^\s*([\d.]+)%\s+\[[.k]\]\s+(.+?)\s*$/.exec(line);
    if (m) symbols.push({ symbol: m[2], share: Number(m[1]) / 100 });
  }
  const groups = new Map(GROUPS.map(([name]) => [name, 0]));
  let other = 0;
  for (const s of symbols) {
    const g = GROUPS.find(([, re]) => re.test(s.symbol));
    if (g) groups.set(g[0], groups.get(g[0]) + s.share);
    else other += s.share;
  }
  const steps = JSON.parse(
    `[${readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').join(',')}]`,
  ).filter((e) => e.type === 'step');
  return {
    command: `perf record -e cpu-clock -F 499 -- fsdp-train-native (${SHAPE}, B 8, T 128, 3 steps, peak cached)`,
    step_cpu_s: steps.map((s) => s.cpu_ms / 1000),
    groups: [...groups.entries(), ['other', other]]
      .map(([name, share]) => ({ name, share }))
      .filter((g) => g.share > 0.001)
      .sort((a, b) => b.share - a.share),
    top_symbols: symbols.slice(0, 15),
  };
}

const loadAtStart = loads();
const probe = JSON.parse(execFileSync(native, ['--probe'], { encoding: 'utf8', env: benchEnv }));
if (!existsSync(python))
  throw new Error(
    `${python} is missing: the project's .venv (npm test's set-up makes it: scripts/setup/python-env.mjs)`,
  );
log('sgemm peak');
const peakBefore = sgemmPeak();

let tiny;
if (TINY) {
  log('samples/tiny-cpu.yaml');
  const entropy = JSON.parse(
    readFileSync(path.join(data, 'fortunes-byte-val.stats.json'), 'utf8'),
  ).unigram_entropy_nats;
  const run = await train(path.join(root, 'samples', 'tiny-cpu.yaml'), [
    '--set',
    'logging.eval_every_n_steps=5',
    '--set',
    'checkpointing.save_every_n_steps=0',
  ]);
  const below = run.events.find((e) => e.type === 'eval' && e.val_loss < entropy);
  const evals = run.events.filter((e) => e.type === 'eval');
  const steps = run.events.filter((e) => e.type === 'step').slice(3);
  tiny = {
    steps: steps.length + 3,
    tokens_per_s: median(steps.map((s) => s.tokens_per_s)),
    mfu: median(steps.map((s) => s.mfu)),
    unigram_entropy: entropy,
    seconds_to_val_below_entropy: below ? below.time - run.started : null,
    step_of_val_below_entropy: below?.step ?? null,
    final_val_loss: evals.at(-1)?.val_loss,
    wall_seconds: run.ended - run.started,
  };
}

const CONFIGS = [
  { name: 'gpt2-124m-t128-b8', seq: 128, batch: 8, checkpointing: 'none', steps: 2, rounds: ROUNDS, profile: true },
  { name: 'gpt2-124m-t512-b2', seq: 512, batch: 2, checkpointing: 'none', steps: 1, rounds: Math.min(ROUNDS, 2) },
  {
    name: 'gpt2-124m-t512-b2-ckpt1',
    seq: 512,
    batch: 2,
    checkpointing: 'every-1',
    steps: 1,
    rounds: Math.min(ROUNDS, 2),
  },
  {
    name: 'smollm2-135m-t512-b1',
    arch: 'llama',
    seq: 512,
    batch: 1,
    checkpointing: 'none',
    steps: 1,
    rounds: Math.min(ROUNDS, 2),
  },
].filter((c) => !ONLY || c.name.includes(ONLY));
const sideBySideResults = [];
for (const c of CONFIGS) sideBySideResults.push(await sideBySide(STEPS ? { ...c, steps: STEPS } : c));

log('perf profile of the native steps');
const nativeProfile = profileNative();
const peakAfter = sgemmPeak();
const torchVersion = sideBySideResults[0]?.eager.torch;

const result = {
  date: new Date().toISOString(),
  command: `npm run bench:cpu${args.length ? ` -- ${args.join(' ')}` : ''}`,
  ...provenance({ cpu_kind: cpuKind(), blas: probe.blas, blas_kernels: probe.blas_kernels, torch: torchVersion }),
  threads: THREADS,
  model: { ...gpt2Model, shape: SHAPE },
  llama_model: { ...smollm2Model, shape: "SmolLM2-135M's (random init); PyTorch: transformers' LlamaForCausalLM" },
  environment: {
    OMP_WAIT_POLICY: benchEnv.OMP_WAIT_POLICY,
    TORCHINDUCTOR_COMPILE_THREADS: benchEnv.TORCHINDUCTOR_COMPILE_THREADS,
    nice: os.getPriority(),
  },
  // os.loadavg(): 1, 5 and 15 minutes.
  load_average: { start: loadAtStart, end: loads() },
  sgemm_peak_flops: { before: peakBefore, after: peakAfter },
  ...(tiny ? { tiny_cpu: tiny } : {}),
  side_by_side: sideBySideResults,
  native_profile: nativeProfile,
};
rmSync(work, { recursive: true, force: true });

const day = result.date.slice(0, 10);
const cpuMd = (k) =>
  `${k.kind}, family 0x${k.family.toString(16)} model ${k.model_number}${k.bf16 ? ', AVX512_BF16' : ''}${k.amx ? ', AMX' : ', no AMX'}`;
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const ac = (c) => (c.checkpointing === 'every-1' ? 'checkpointing every layer' : 'no checkpointing');
const rows = sideBySideResults.flatMap((r) =>
  [
    ['native', r.native],
    ...(r.native_bf16 ? [['native, bf16 products', r.native_bf16]] : []),
    ['PyTorch eager', r.eager],
    ['torch.compile', r.compile],
    ...(r.eager_bf16 ? [['PyTorch eager, bf16 autocast', r.eager_bf16]] : []),
    ...(r.compile_bf16 ? [['torch.compile, bf16 autocast', r.compile_bf16]] : []),
  ].map(
    ([who, s]) =>
      `| ${r.config.name} (B ${r.config.batch}, T ${r.config.seq}, ${ac(r.config)}) | ${who} | ${
        s.not_measured
          ? `${s.not_measured} | | | | | |`
          : `${f2(s.step_s_median)} | ${f2(s.step_cpu_s_median)} | ${s.tokens_per_s.toFixed(0)} | ${s.cpu_tokens_per_s.toFixed(0)} | ${f1(s.cpu_gflops)} | ${s.steps} |`
      }`,
  ),
);
const vs = (x) => (x ? `${f2(x)}×` : '—');
const ratioRows = sideBySideResults.map(
  (r) =>
    `| ${r.config.name} | ${vs(r.native_vs.eager.wall)} | ${vs(r.native_vs.eager.cpu)} | ${vs(r.native_vs.compile?.wall)} | ${vs(r.native_vs.compile?.cpu)} | ${f1(r.load_average_1min.median)} (${f1(r.load_average_1min.min)}–${f1(r.load_average_1min.max)}) |`,
);
const t128 = sideBySideResults.find((r) => r.config.name === 'gpt2-124m-t128-b8');
const llama = sideBySideResults.find((r) => r.config.arch === 'llama');
const met = (x, target) => (x === undefined ? 'not measured' : x >= target ? `met (${f2(x)}×)` : `NOT met (${f2(x)}×)`);
const compileMd = (r) =>
  r.compile.not_measured
    ? `torch.compile ${r.compile.not_measured}.`
    : `torch.compile's first step (compiling) took ${f1(r.compile.first_step_s)} s.`;
const loadMd = (l) => l.map(f1).join(' / ');
const profileMd = nativeProfile.skipped
  ? `not profiled: ${nativeProfile.skipped}.`
  : `\`${nativeProfile.command}\`; steps' CPU seconds ${nativeProfile.step_cpu_s.map(f1).join(', ')}. Share of the process's samples (initialisation included, shown apart):

| where | share |
|---|---:|
${nativeProfile.groups.map((g) => `| ${g.name} | ${pct(g.share)} |`).join('\n')}`;
const eagerProfileMd = t128?.eager_profile
  ? `PyTorch eager, one step at T 128 (torch.profiler, self CPU time of all threads):

| op | share | calls |
|---|---:|---:|
${t128.eager_profile.map((o) => `| ${o.op} | ${pct(o.share)} | ${o.calls} |`).join('\n')}`
  : '';
const md = `# Native runtime on the CPU beside PyTorch 2, ${day}

Command: \`${result.command}\` (commit ${result.commit}). Machine: ${result.machine.cpu} (${cpuMd(result.machine.cpu_kind)}), ${result.machine.cores} cores, ${result.machine.memory_gib} GiB; ${probe.blas_kernels.note}; PyTorch ${torchVersion ?? '(not run)'}.
${THREADS} threads everywhere; OMP_WAIT_POLICY=${benchEnv.OMP_WAIT_POLICY} for both; the benchmark ran at nice ${result.environment.nice}. The machine is shared: load average (1 / 5 / 15 minutes) ${loadMd(result.load_average.start)} at the start, ${loadMd(result.load_average.end)} at the end (1-minute, per configuration, below). So every speed is given twice: by the **wall** clock (under that load), and by the **CPU** time the process used (all its threads: the work, as on cores nobody else uses; tokens per CPU-second × ${THREADS} threads). The runs are interleaved (${['native', NATIVE_BF16 && 'native bf16', 'eager', AUTOCAST && 'eager bf16 autocast', COMPILE && 'compile', COMPILE && AUTOCAST && 'compile bf16 autocast'].filter(Boolean).join(', ')}; ${sideBySideResults.map(({ config: c }) => `${c.rounds} round${c.rounds > 1 ? 's' : ''} of ${c.steps} step${c.steps > 1 ? 's' : ''} at ${c.name}`).join(', ')}) and the figures are medians of the steps after each one's warm-up.

OpenBLAS sgemm peak (2048³, best of ${PEAK_RUNS}, ${THREADS} threads), before / after: wall ${f1(peakBefore.wall / 1e9)} / ${f1(peakAfter.wall / 1e9)} GFLOP/s, by CPU time ${f1(peakBefore.cpu / 1e9)} / ${f1(peakAfter.cpu / 1e9)} GFLOP/s.

## Native vs PyTorch 2 (gpt2 rows: ${SHAPE}; smollm2 rows: SmolLM2-135M's shape, V 49152, against transformers' LlamaForCausalLM; fp32, AdamW)

| config | runner | step s (wall) | step CPU s | tokens/s wall | tokens/s by CPU time | GFLOP/s by CPU time | steps |
|---|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

Native's speed-up (PyTorch's step time / native's):

| config | vs eager, wall | vs eager, CPU | vs torch.compile, wall | vs torch.compile, CPU | load (median, range) |
|---|---:|---:|---:|---:|---:|
${ratioRows.join('\n')}

${
  sideBySideResults.some((r) => r.eager_bf16)
    ? `PyTorch's bf16 autocast (forward and loss under torch.autocast('cpu', dtype=torch.bfloat16); fp32 weights, gradients and AdamW) against fp32:

| config | native fp32 vs eager bf16, wall | CPU | eager bf16's speed-up over eager fp32, wall | CPU |
|---|---:|---:|---:|---:|
${sideBySideResults
  .filter((r) => r.eager_bf16)
  .map(
    (r) =>
      `| ${r.config.name} | ${vs(r.native_vs.eager_bf16.wall)} | ${vs(r.native_vs.eager_bf16.cpu)} | ${vs(r.eager_bf16_speedup_over_fp32.wall)} | ${vs(r.eager_bf16_speedup_over_fp32.cpu)} |`,
  )
  .join('\n')}
`
    : ''
}
${
  sideBySideResults.some((r) => r.native_bf16)
    ? `The native runtime in bf16 (the same config plus \`mixed_precision: { param_dtype: bfloat16 }\`: bf16 products, fp32 weights, gradients and AdamW), speed-up (other's step time / native bf16's), **by CPU time** (wall beside it):

| config | over native fp32, CPU | wall | over eager bf16 autocast, CPU | wall | over eager fp32, CPU | wall | over torch.compile bf16 autocast, CPU | wall |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${sideBySideResults
  .filter((r) => r.native_bf16)
  .map((r) =>
    r.native_bf16_vs
      ? `| ${r.config.name} | ${vs(r.native_bf16_vs.native_fp32.cpu)} | ${vs(r.native_bf16_vs.native_fp32.wall)} | ${vs(r.native_bf16_vs.eager_bf16.cpu)} | ${vs(r.native_bf16_vs.eager_bf16.wall)} | ${vs(r.native_bf16_vs.eager_fp32.cpu)} | ${vs(r.native_bf16_vs.eager_fp32.wall)} | ${vs(r.native_bf16_vs.compile_bf16?.cpu)} | ${vs(r.native_bf16_vs.compile_bf16?.wall)} |`
      : `| ${r.config.name} | ${r.native_bf16.not_measured} | | | | | | | |`,
  )
  .join('\n')}

Each runner's matrix products (native: its run_start's runtime.gemm; PyTorch: its build report, torch.__config__):

| config | runner | GEMM |
|---|---|---|
${sideBySideResults
  .flatMap((r) =>
    [
      ['native', r.native],
      ['native, bf16 products', r.native_bf16],
      ['PyTorch eager', r.eager],
      ['PyTorch eager, bf16 autocast', r.eager_bf16],
      ['torch.compile, bf16 autocast', r.compile_bf16],
    ]
      .filter(([, s]) => s)
      .map(
        ([who, s]) =>
          `| ${r.config.name} | ${who} | ${s.not_measured ?? (typeof s.gemm === 'object' ? s.gemm.note : (s.gemm ?? 'not reported'))} |`,
      ),
  )
  .join('\n')}
`
    : ''
}
${t128 ? `Targets at T 128: native ≥ 1.5× eager — by CPU time ${met(t128.native_vs.eager.cpu, 1.5)}, by wall ${met(t128.native_vs.eager.wall, 1.5)}; ≥ 1.3× torch.compile — by CPU time ${met(t128.native_vs.compile?.cpu, 1.3)}, by wall ${met(t128.native_vs.compile?.wall, 1.3)}. ${compileMd(t128)}` : ''}

${sideBySideResults
  .filter((r) => r.native_bf16_vs)
  .map(
    (r) =>
      `Targets in bf16 at ${r.config.name} (native bf16 against PyTorch's bf16 autocast), by CPU time: ≥ 1.5× eager — ${met(r.native_bf16_vs.eager_bf16.cpu, 1.5)}; ≥ 1.3× torch.compile — ${met(r.native_bf16_vs.compile_bf16?.cpu, 1.3)}.${r.compile_bf16?.not_measured ? ` torch.compile bf16 autocast ${r.compile_bf16.not_measured}.` : ''}`,
  )
  .join('\n\n')}

${llama ? `Target of the Llama row (issue 35, SmolLM2-135M's shape at T 512): ≥ 1.3× torch.compile by CPU time — ${met(llama.native_vs.compile?.cpu, 1.3)}; by wall ${met(llama.native_vs.compile?.wall, 1.3)}. ${compileMd(llama)}` : ''}

## Where the time goes

Native, ${profileMd}

${eagerProfileMd}
${
  tiny
    ? `
## samples/tiny-cpu.yaml

${tiny.steps} steps; ${tiny.tokens_per_s.toFixed(0)} tokens/s (wall), MFU ${pct(tiny.mfu)}; validation loss ${tiny.step_of_val_below_entropy === null ? 'never went' : `went below the unigram entropy (${tiny.unigram_entropy.toFixed(3)} nats/token) at step ${tiny.step_of_val_below_entropy}, ${f1(tiny.seconds_to_val_below_entropy)} s (wall) after \`fsdp-train\` started`}; final validation loss ${tiny.final_val_loss.toFixed(3)} after ${f1(tiny.wall_seconds)} s in all.
`
    : ''
}`;
writeResults(
  `${NATIVE_BF16 ? 'cpu-bf16-native' : AUTOCAST ? 'cpu-bf16' : 'cpu'}-${result.machine.cpu_kind.kind}`,
  result,
  md,
);
console.log(md);
