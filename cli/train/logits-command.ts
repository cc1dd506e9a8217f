// `npx fsdp-train logits SOURCE [--config CONFIG]`: the native model's float32 logits for one
// sequence of token ids read from standard input (whitespace-separated), one line per position
// holding a JSON array of the vocabulary's logits — so a person can hold an import against
// transformers. SOURCE: a run folder (its newest checkpoint), a checkpoint folder, or a Hugging Face
// folder (Llama, Mistral, Qwen3, GPT-2), which is imported into a temporary step-0 checkpoint first
// exactly as `--from-hf` imports it. The runtime computes (fsdp-train-native --logits, one process, CPU).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunConfig } from '../../core/config/run-config';
import { exportSource } from '../../runs/folder/hf-export';
import { holdsRunManifest } from '../../runs/folder/run-folder';

export const LOGITS_USAGE = `usage: fsdp-train logits SOURCE [--config CONFIG] < TOKENS

Prints the model's float32 logits for the token ids on standard input (whitespace-separated, one
sequence of at most model.max_seq_len): one line per position, a JSON array of vocab_size numbers.
SOURCE: a run folder (its newest checkpoint), a checkpoint folder (inside a run folder, or with
--config its run config), or a Hugging Face folder (config.json + safetensors: LlamaForCausalLM,
MistralForCausalLM, Qwen3ForCausalLM, GPT2LMHeadModel), read as --from-hf reads it.
Exit codes: 0 printed, 1 failed, 2 bad arguments or input.`;

const EXIT_ARGS = 2;
// A sequence is at most the model's context; its ids as text, bounded well above that.
const MAX_STDIN_BYTES = 64 << 20;

export function logitsCommand(argv: string[], native: string): number {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (e) {
    console.error(`fsdp-train logits: ${(e as Error).message}\n${LOGITS_USAGE}`);
    return EXIT_ARGS;
  }
  if (args.values.help) {
    console.log(LOGITS_USAGE);
    return 0;
  }
  if (args.positionals.length !== 1) {
    console.error(LOGITS_USAGE);
    return EXIT_ARGS;
  }
  const tokens = readTokens();
  if (typeof tokens === 'string') {
    console.error(`fsdp-train logits: standard input: ${tokens}`);
    return EXIT_ARGS;
  }
  if (!existsSync(native)) {
    console.error(`fsdp-train logits: the native runtime is not built (${native}): run npm install`);
    return 1;
  }
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'fsdp-logits-'));
  try {
    const source = sourceOf(path.resolve(args.positionals[0]), args.values.config, native, scratch);
    if (typeof source === 'string') {
      console.error(`fsdp-train logits: ${source}`);
      return EXIT_ARGS;
    }
    const r = spawnSync(native, ['--logits', source.configFile, source.checkpoint], {
      input: JSON.stringify([tokens]),
      encoding: 'utf8',
      maxBuffer: 1 << 30,
      env: { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' },
    });
    if (r.status !== 0) {
      process.stderr.write(r.stderr || `fsdp-train logits: the runtime failed (${r.error?.message ?? r.status})\n`);
      return r.status === EXIT_ARGS ? EXIT_ARGS : 1;
    }
    const out = JSON.parse(r.stdout) as { shape: [number, number, number]; logits: number[] };
    const [, t, v] = out.shape;
    for (let i = 0; i < t; i++) process.stdout.write(`${JSON.stringify(out.logits.slice(i * v, (i + 1) * v))}\n`);
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The ids on standard input, or what is wrong with them. */
function readTokens(): number[] | string {
  let text: string;
  try {
    const buf = readFileSync(0);
    if (buf.length > MAX_STDIN_BYTES) return `more than ${MAX_STDIN_BYTES} bytes`;
    text = buf.toString('utf8');
  } catch (e) {
    return (e as Error).message;
  }
  const words = text.split(/\s+/).filter((w) => w !== '');
  if (words.length === 0)
    return 'no token ids (give whitespace-separated ids, e.g. echo "1 5 9" | fsdp-train logits …)';
  const ids: number[] = [];
  for (const w of words) {
    if (!/^\d+$/.test(w) || !Number.isSafeInteger(Number(w))) return `${JSON.stringify(w)} is not a token id`;
    ids.push(Number(w));
  }
  return ids;
}

/** The run config (resolved, JSON) and checkpoint the runtime reads for SOURCE. */
function sourceOf(
  at: string,
  configFile: string | undefined,
  native: string,
  scratch: string,
): { configFile: string; checkpoint: string } | string {
  const isRunOrCheckpoint =
    existsSync(path.join(at, 'manifest.json')) || holdsRunManifest(at) || configFile !== undefined;
  if (isRunOrCheckpoint) {
    try {
      const source = exportSource(at, configFile);
      if (configFile === undefined) return source;
      // A config as people write it: the runtime reads it resolved.
      const loaded = loadRunConfig(readFileSync(source.configFile, 'utf8'), source.configFile);
      if (!loaded.config)
        return `${source.configFile}: ${loaded.problems.find((p) => p.severity === 'error')?.message}`;
      const resolved = path.join(scratch, 'config.json');
      writeFileSync(resolved, JSON.stringify(loaded.config));
      return { configFile: resolved, checkpoint: source.checkpoint };
    } catch (e) {
      return (e as Error).message;
    }
  }
  // A Hugging Face folder: a run config whose model is only from_hf, and its weights as step 0.
  const text = JSON.stringify({
    model: { from_hf: at },
    data: { train: path.join(scratch, 'unused.tok') },
    training: { max_steps: 1, batch_size_per_gpu: 1, learning_rate: 0.001 },
  });
  const loaded = loadRunConfig(text, path.join(scratch, 'logits-source.json'));
  if (!loaded.config) return loaded.problems.find((p) => p.severity === 'error')?.message ?? `${at}: not readable`;
  const resolved = path.join(scratch, 'config.json');
  writeFileSync(resolved, JSON.stringify(loaded.config));
  const checkpoints = path.join(scratch, 'checkpoints');
  const imported = spawnSync(native, ['--import-hf', resolved, at, checkpoints], { encoding: 'utf8' });
  if (imported.status !== 0) return imported.stderr.trim().replace(/^fsdp-train-native: /, '') || `${at}: not imported`;
  return { configFile: resolved, checkpoint: path.join(checkpoints, 'step-00000000') };
}
