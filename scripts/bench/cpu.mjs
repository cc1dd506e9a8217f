// `npm run bench:cpu`: the native runtime's speed on this machine's CPU.
//  1. OpenBLAS sgemm peak (2048^3, both threads), measured in this same run: MFU's denominator.
//  2. samples/tiny-cpu.yaml: tokens/s, achieved GFLOP/s, MFU, and the wall-clock time from the
//     start of `fsdp-train` to a validation loss below the corpus's unigram entropy.
//  3. A GPT-2-124M-shaped model (V 50257, d 768, 12 layers, 12 heads) at short sequence (T 128,
//     micro-batch 8) on the GPT-2-tokenised corpus: tokens/s, GFLOP/s, MFU (target >= 50%).
//  4. Activation checkpointing (none / every-2 / every-1 / selective) on the 124M shape at T 256:
//     measured peak memory and tokens/s.
// Writes bench/results/cpu-<date>.json and .md with the machine, the load and this command.
//
// The machine is shared, so each speed is given twice: by the wall clock, and by the CPU time the
// process used (the step event's cpu_ms; sgemm's CPU time likewise), which is what the same work
// takes on cores nobody else uses. MFU compares like with like: wall with wall, CPU with CPU.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setup, root } from '../setup/index.mjs';
import { load, median, provenance, scratchFolder, train as trainIn, writeResults } from './native-bench.mjs';

await setup('start', { codeServer: false });
const native = path.join(root, 'native', 'build', 'Release', 'fsdp-train-native');
const data = path.join(root, 'samples', 'data');
const work = scratchFolder('cpu');
const train = (configFile, extraArgs) => trainIn(work, configFile, extraArgs);

function sgemmPeak() {
  // Best of three: the peak this BLAS reaches on these cores under the load of the moment.
  const runs = [0, 1, 2].map(() => JSON.parse(execFileSync(native, ['--sgemm-peak', '2048'], { encoding: 'utf8' })));
  return { wall: Math.max(...runs.map((r) => r.flops)), cpu: Math.max(...runs.map((r) => r.cpu_flops)) };
}

/** Throughput of the steps after the first `warmup` (the first ones fault in memory and caches). */
function throughput(events, warmup, peak) {
  const start = events.find((e) => e.type === 'run_start');
  const steps = events.filter((e) => e.type === 'step').slice(warmup);
  const threads = start.runtime.threads;
  const stepMs = median(steps.map((s) => s.step_ms));
  const cpuMs = median(steps.map((s) => s.cpu_ms));
  const tokensPerStep = steps[0].tokens_per_s * steps[0].step_ms / 1000;
  const wall = tokensPerStep / (stepMs / 1000);
  const cpu = tokensPerStep / (cpuMs / 1000 / threads);
  return {
    steps_measured: steps.length,
    threads,
    step_ms_median: stepMs,
    cpu_ms_median: cpuMs,
    tokens_per_s: wall,
    gflops: (wall * start.flops_per_token) / 1e9,
    mfu: (wall * start.flops_per_token) / peak.wall,
    cpu_tokens_per_s: cpu,
    cpu_gflops: (cpu * start.flops_per_token) / 1e9,
    cpu_mfu: (cpu * start.flops_per_token) / peak.cpu,
    mem_peak: steps[0].mem_peak,
    mem_peak_by_category: steps[0].mem_peak_by_category,
    flops_per_token: start.flops_per_token,
  };
}

function writeConfig(name, config) {
  const file = path.join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify({ name, ...config }, null, 2));
  return file;
}

const gpt2Model = { d_model: 768, n_layers: 12, n_heads: 12, vocab_size: 50257, max_seq_len: 1024 };
function gpt2Config(name, seqLen, batch, steps, extra = {}) {
  return writeConfig(name, {
    model: gpt2Model,
    data: { train: path.join(data, 'fortunes-gpt2-train.tok'), seq_len: seqLen },
    training: { batch_size_per_gpu: batch, max_steps: steps, learning_rate: 0.0006, warmup_steps: 2 },
    fsdp: { sharding_strategy: 'NO_SHARD' },
    checkpointing: { save_final: false },
    ...extra,
  });
}

const loadAtStart = load();
console.error('bench:cpu: sgemm peak…');
const peakBefore = sgemmPeak();

console.error('bench:cpu: samples/tiny-cpu.yaml…');
const entropy = JSON.parse(readFileSync(path.join(data, 'fortunes-byte-val.stats.json'), 'utf8')).unigram_entropy_nats;
const tinyArgs = ['--set', 'logging.eval_every_n_steps=5', '--set', 'checkpointing.save_every_n_steps=0'];
const tiny = await train(path.join(root, 'samples', 'tiny-cpu.yaml'), tinyArgs);
const belowEntropy = tiny.events.find((e) => e.type === 'eval' && e.val_loss < entropy);
const tinyEvals = tiny.events.filter((e) => e.type === 'eval');

console.error('bench:cpu: GPT-2 124M shape, T 128…');
const gpt2 = await train(gpt2Config('gpt2-124m-t128', 128, 8, 6));

console.error('bench:cpu: activation checkpointing…');
const policies = [
  ['none', { enabled: false }],
  ['every-2', { enabled: true, policy: 'every_n', every_n_layers: 2 }],
  ['every-1', { enabled: true, policy: 'every_n', every_n_layers: 1 }],
  ['selective', { enabled: true, policy: 'selective' }],
];
const checkpointing = [];
for (const [name, ac] of policies) {
  const r = await train(gpt2Config(`gpt2-124m-t256-${name}`, 256, 4, 4, { activation_checkpointing: ac }));
  checkpointing.push({ policy: name, ...r });
}

const peakAfter = sgemmPeak();
const peak = { wall: Math.max(peakBefore.wall, peakAfter.wall), cpu: Math.max(peakBefore.cpu, peakAfter.cpu) };
const result = {
  date: new Date().toISOString(),
  command: 'npm run bench:cpu',
  ...provenance({ blas: JSON.parse(execFileSync(native, ['--probe'], { encoding: 'utf8' })).blas }),
  load_average_1min: { start: loadAtStart, end: load() },
  sgemm_peak_flops: { before: peakBefore, after: peakAfter, used: peak },
  tiny_cpu: {
    ...throughput(tiny.events, 3, peak),
    unigram_entropy: entropy,
    seconds_to_val_below_entropy: belowEntropy ? belowEntropy.time - tiny.started : null,
    step_of_val_below_entropy: belowEntropy?.step ?? null,
    final_val_loss: tinyEvals.at(-1)?.val_loss,
    wall_seconds: tiny.ended - tiny.started,
  },
  gpt2_124m_t128: throughput(gpt2.events, 2, peak),
  activation_checkpointing: checkpointing.map((c) => ({ policy: c.policy, ...throughput(c.events, 1, peak) })),
};
rmSync(work, { recursive: true, force: true });

const day = result.date.slice(0, 10);
const mib = (b) => (b / 2 ** 20).toFixed(1);
const t = result.tiny_cpu, g = result.gpt2_124m_t128;
const tinySteps = tiny.events.filter((e) => e.type === 'step').length;
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const row = (name, r) => `| ${name} | ${r.tokens_per_s.toFixed(0)} | ${r.gflops.toFixed(1)} | ${pct(r.mfu)} | ${r.cpu_tokens_per_s.toFixed(0)} | ${r.cpu_gflops.toFixed(1)} | ${pct(r.cpu_mfu)} | ${r.step_ms_median.toFixed(0)} | ${mib(r.mem_peak)} |`;
const none = result.activation_checkpointing[0];
const md = `# Native runtime on the CPU, ${day}

Command: \`${result.command}\` (commit ${result.commit}). Machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${result.machine.memory_gib} GiB, ${result.machine.blas}.
1-minute load average: ${result.load_average_1min.start.toFixed(2)} at the start, ${result.load_average_1min.end.toFixed(2)} at the end. The machine is shared, so speeds are given twice: by the **wall** clock (under that load), and by the **CPU** time the process used (the work, as on cores nobody else uses: tokens per CPU-second × ${g.threads} threads). MFU compares wall with wall and CPU with CPU.

OpenBLAS sgemm peak (2048³, best of 3, ${g.threads} threads), before / after: wall ${(result.sgemm_peak_flops.before.wall / 1e9).toFixed(1)} / ${(result.sgemm_peak_flops.after.wall / 1e9).toFixed(1)} GFLOP/s, CPU ${(result.sgemm_peak_flops.before.cpu / 1e9).toFixed(1)} / ${(result.sgemm_peak_flops.after.cpu / 1e9).toFixed(1)} GFLOP/s; MFU uses the higher of each (${(peak.wall / 1e9).toFixed(1)} and ${(peak.cpu / 1e9).toFixed(1)}).

| run | tokens/s wall | GFLOP/s wall | MFU wall | tokens/s CPU | GFLOP/s CPU | MFU CPU | step ms | peak memory MiB |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${row('samples/tiny-cpu.yaml (B 16, T 128)', t)}
${row('GPT-2 124M shape (B 8, T 128)', g)}

Target for the 124M shape: MFU ≥ 50% of the sgemm peak — wall ${g.mfu >= 0.5 ? 'met' : 'NOT met'} (${pct(g.mfu)}), CPU ${g.cpu_mfu >= 0.5 ? 'met' : 'NOT met'} (${pct(g.cpu_mfu)}).

tiny-cpu: validation loss ${t.step_of_val_below_entropy === null ? 'never went' : `went below the unigram entropy (${t.unigram_entropy.toFixed(3)} nats/token) at step ${t.step_of_val_below_entropy}, ${t.seconds_to_val_below_entropy.toFixed(1)} s (wall) after \`fsdp-train\` started`} (evaluating every 5 steps); final validation loss ${t.final_val_loss.toFixed(3)} after ${t.wall_seconds.toFixed(1)} s in all (${tinySteps} steps).

## Activation checkpointing (GPT-2 124M shape, B 4, T 256, 4 steps)

| policy | peak memory MiB | activations MiB | tokens/s wall | tokens/s CPU | CPU vs none |
|---|---:|---:|---:|---:|---:|
${result.activation_checkpointing.map((c) => `| ${c.policy} | ${mib(c.mem_peak)} | ${mib(c.mem_peak_by_category.activations)} | ${c.tokens_per_s.toFixed(0)} | ${c.cpu_tokens_per_s.toFixed(0)} | ${(100 * c.cpu_tokens_per_s / none.cpu_tokens_per_s).toFixed(0)}% |`).join('\n')}

Peak memory is the runtime allocator's measured peak of a step (equal to the plan, native/MEMORY.md).
`;
writeResults('cpu', result, md);
console.log(md);
