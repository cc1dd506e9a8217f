// `npm run bench:estimator`: how fast the memory estimator answers.
//  1. One estimate (core/memory, in Node): median and p95 over many runs, for configs from a tiny
//     CPU run to a 70B model on 64 GPUs; also reading a config file plus estimating.
//  2. The panel's update after an input change, in Chromium (Debian's, through playwright-core),
//     with the real webview bundle: the synchronous re-estimate + redraw, and the time from the
//     input event to the next animation frame — against one frame at 60 Hz (16.7 ms).
// Writes bench/results/estimator-<date>.json and .md with the machine, load and command.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { estimateMemory } from '../core/memory/estimate';
import { isConfigInputError } from '../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../core/memory/inputs/read-config';
import { defaultMemoryInput, type MemoryInput } from '../core/memory/memory-input';
import { findModelPreset } from '../core/memory/model-presets';
import type { EstimatorConfigMessage } from '../core/panels/memory-estimator-messages';

const root = path.resolve(__dirname, '..');
const FRAME_MS = 1000 / 60;
// Shown by the next frame: the event comes right after a frame, so the next one is at most a frame
// away; a quarter frame allows for the timer's and vsync's jitter. Later means a frame was missed.
const NEXT_FRAME_MS = FRAME_MS * 1.25;

function preset(id: string): ReturnType<typeof findModelPreset> & object {
  return findModelPreset(id)!;
}

const sample = readFileSync(path.join(root, 'samples', 'tiny-cpu.yaml'), 'utf8');
const sampleInput = readConfigForEstimate(sample, 'tiny-cpu.yaml');
if (isConfigInputError(sampleInput)) throw new Error(sampleInput.error);

const CASES: Array<{ name: string; input: MemoryInput }> = [
  { name: 'samples/tiny-cpu.yaml (our runtime, 4 layers)', input: sampleInput.input },
  {
    name: 'GPT-2 124M, PyTorch FSDP, 8 GPUs, bf16',
    input: {
      ...defaultMemoryInput(preset('gpt2-124m').shape, 1024),
      microBatch: 16,
      nprocPerNode: 8,
      precision: { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' },
    },
  },
  {
    name: 'Llama 2 7B, DeepSpeed ZeRO-3, 8 GPUs, bf16',
    input: {
      ...defaultMemoryInput(preset('llama-2-7b').shape, 4096),
      framework: 'deepspeed',
      microBatch: 2,
      nprocPerNode: 8,
      precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' },
    },
  },
  {
    name: 'Llama 3 70B, PyTorch FSDP, 8 × 8 GPUs, every-block checkpointing',
    input: {
      ...defaultMemoryInput(preset('llama-3-70b').shape, 8192),
      microBatch: 1,
      nprocPerNode: 8,
      nnodes: 8,
      checkpointing: { policy: 'every_n', everyN: 1 },
      precision: { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' },
    },
  },
  {
    name: 'GPT-2 1.5B, our runtime, auto checkpointing (budget 8 GiB)',
    input: {
      ...defaultMemoryInput(preset('gpt2-1.5b').shape, 1024),
      framework: 'fsdp-studio',
      attention: 'eager',
      microBatch: 8,
      checkpointing: { policy: 'auto', everyN: 1, budgetBytes: 8 * 1024 ** 3 },
    },
  },
];

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: q(0.5), p95: q(0.95), max: s[s.length - 1] };
}

/** Times `fn` in batches (timer resolution), after a warm-up; returns ms per call. */
function time(fn: (i: number) => void, batches = 200, perBatch = 50): ReturnType<typeof stats> {
  for (let i = 0; i < 20; i++) fn(1_000_000 + i);
  const out: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now();
    for (let i = 0; i < perBatch; i++) fn(b * perBatch + i);
    out.push((performance.now() - t0) / perBatch);
  }
  return stats(out);
}

async function panelTimings(): Promise<{
  update: ReturnType<typeof stats>;
  toFrame: ReturnType<typeof stats>;
  nextFrame: number;
  config: string;
}> {
  const bundle = path.join(root, 'dist', 'webview', 'memory-estimator.js');
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run npm run build first`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-bench-panel-'));
  const config: EstimatorConfigMessage = {
    type: 'config',
    fileName: 'gpt2-124m.yaml',
    kind: 'run-config',
    input: CASES[1].input,
    notes: [],
    hostMemoryBytes: os.totalmem(),
  };
  // The panel as VS Code would host it, with acquireVsCodeApi provided by the page.
  writeFileSync(
    path.join(dir, 'index.html'),
    `<!DOCTYPE html><html><head><link rel="stylesheet" href="file://${path.join(root, 'dist', 'webview', 'memory-estimator.css')}"></head><body><div id="app"></div>
<script>window.acquireVsCodeApi = () => ({ postMessage() {}, getState() { return undefined; }, setState() {} });</script>
<script src="file://${bundle}"></script></body></html>`,
  );
  const browser = await chromium.launch({
    executablePath: process.env.FSDP_STUDIO_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(`file://${path.join(dir, 'index.html')}`);
    await page.evaluate((m) => window.postMessage(m, '*'), config as unknown as Record<string, unknown>);
    await page.waitForSelector('#app[data-updates]');
    const samples = await page.evaluate(async () => {
      const field = document.querySelector('#micro-batch') as HTMLElement & { value: string };
      const input = field.shadowRoot!.querySelector('input')!;
      const app = document.getElementById('app')!;
      const out: Array<{ update: number; toFrame: number }> = [];
      for (let i = 0; i < 120; i++) {
        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))); // start between frames
        input.value = String(1 + (i % 32));
        const t0 = performance.now();
        input.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
        const update = Number(app.dataset.updateMs);
        // The next animation frame after the event is the one that shows the update.
        const toFrame = await new Promise<number>((r) => requestAnimationFrame(() => r(performance.now() - t0)));
        out.push({ update, toFrame });
      }
      return out;
    });
    const measured = samples.slice(20); // the first updates compile the code paths
    const nextFrame = measured.filter((s) => s.toFrame <= NEXT_FRAME_MS).length / measured.length;
    return {
      update: stats(measured.map((s) => s.update)),
      toFrame: stats(measured.map((s) => s.toFrame)),
      nextFrame,
      config: CASES[1].name,
    };
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const load = os.loadavg();
  // Every call a new micro-batch: estimates are memoised, and the bench measures making one.
  const estimates = CASES.map((c) => ({
    name: c.name,
    ms: time((i) => estimateMemory({ ...c.input, microBatch: c.input.microBatch + i }), 40, 5),
  }));
  const readAndEstimate = time(
    () => {
      const r = readConfigForEstimate(sample, 'tiny-cpu.yaml');
      if (!isConfigInputError(r)) estimateMemory(r.input);
    },
    100,
    20,
  );
  const panel = await panelTimings();
  const date = new Date().toISOString().slice(0, 10);
  const chromiumVersion = execFileSync(process.env.FSDP_STUDIO_CHROMIUM ?? '/usr/bin/chromium', ['--version'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
  const result = {
    date,
    command: 'npm run bench:estimator',
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      memoryGiB: +(os.totalmem() / 1024 ** 3).toFixed(1),
      node: process.version,
      chromium: chromiumVersion,
      loadAverage1m: +load[0].toFixed(2),
    },
    oneEstimateMs: estimates,
    readConfigAndEstimateMs: readAndEstimate,
    panel: {
      frameBudgetMs: +FRAME_MS.toFixed(2),
      config: panel.config,
      updateMs: panel.update,
      inputToNextFrameMs: panel.toFrame,
      shownByNextFrame: +panel.nextFrame.toFixed(3),
    },
  };
  mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
  const base = path.join(root, 'bench', 'results', `estimator-${date}`);
  writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
  const f = (x: number) => x.toFixed(3);
  const md = [
    `# Memory estimator benchmark, ${date}`,
    '',
    `Command: \`${result.command}\`. Machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${result.machine.memoryGiB} GiB, Node ${result.machine.node}, ${chromiumVersion}; 1-minute load average at the start: ${result.machine.loadAverage1m} (the machine is shared).`,
    '',
    '## One estimate (formulas ≤ 1 ms; a PyTorch estimate replays the run through the caching allocator and takes longer)',
    '',
    '| config | median ms | p95 ms | max ms |',
    '|---|---:|---:|---:|',
    ...estimates.map((e) => `| ${e.name} | ${f(e.ms.median)} | ${f(e.ms.p95)} | ${f(e.ms.max)} |`),
    `| read samples/tiny-cpu.yaml (parse, schema check) + estimate | ${f(readAndEstimate.median)} | ${f(readAndEstimate.p95)} | ${f(readAndEstimate.max)} |`,
    '',
    `## Panel update after a micro-batch change (target: within one frame, ${FRAME_MS.toFixed(1)} ms)`,
    '',
    `${panel.config}; the webview re-estimates the config and redraws in the input event; the strategy × GPU table (20 estimates), the largest micro-batch on 6 GPUs and each knob's effect follow after that frame, in slices of ≤ 8 ms between frames. ${panel.update.n} changes.`,
    '',
    '| measure | median ms | p95 ms | max ms |',
    '|---|---:|---:|---:|',
    `| re-estimate + redraw (synchronous, in the input event) | ${f(panel.update.median)} | ${f(panel.update.p95)} | ${f(panel.update.max)} |`,
    `| input event → next animation frame | ${f(panel.toFrame.median)} | ${f(panel.toFrame.p95)} | ${f(panel.toFrame.max)} |`,
    '',
    `Shown by the next frame (≤ ${NEXT_FRAME_MS.toFixed(1)} ms after the event): ${(panel.nextFrame * 100).toFixed(0)} % of the changes.`,
    '',
  ].join('\n');
  writeFileSync(`${base}.md`, md);
  console.log(md);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
