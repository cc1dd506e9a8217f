// Llama and Qwen3 Hugging Face folders in and out of the runtime, held to transformers (issue 35
// item 3): a folder transformers saved (test/fixtures/hf-decoder: a Llama with GQA and biases in
// float32, one file; a Qwen3 with q/k norm, tied, bfloat16, sharded) is imported as a run's step-0
// checkpoint from a config whose model is only `from_hf`, then `fsdp-train export --hf` writes it
// back; transformers loads the export as the same architecture, with its tokenizer files, and its
// float32 logits equal the original folder's within 1e-4 with a KL divergence under 1e-6. And
// `fsdp-train logits FOLDER` — the runtime's own forward pass of the imported model — gives
// transformers' logits within the same bounds, position by position; a run started from the Llama
// folder trains 3 steps and its export gives, in transformers, the trained run's native logits.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { loadRunConfig } from '../../core/config/run-config';
import { writeTokenFile } from '../../core/data/token-file';
import { VENV_PYTHON } from '../harness/pytorch';
import { nativeCli, repoRoot } from './native-build';
import { tempDir, train } from './train-runs';

const FIXTURES = path.join(repoRoot, 'test', 'fixtures', 'hf-decoder');
const LOGITS_SCRIPT = path.join(repoRoot, 'test', 'pytorch', 'hf_causal_lm_logits.py');
const CLI = path.join(repoRoot, 'bin', 'fsdp-train.mjs');

interface Logits {
  architecture: string;
  shape: number[];
  logits: number[];
}

/**
 * transformers' logits, from one Python process for the whole file (hf_causal_lm_logits.py answers a
 * line per request): importing torch and transformers is ~5 s of CPU, each request a fraction of
 * that, and every request still loads its folders afresh with from_pretrained.
 */
class TransformersLogits {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: Array<(line: string | undefined) => void> = [];
  private stderr = '';

  constructor() {
    this.child = spawn(VENV_PYTHON, [LOGITS_SCRIPT], { env: { ...process.env, HF_HUB_OFFLINE: '1' } });
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => this.answers.shift()?.(line));
    this.child.stderr.on('data', (b: Buffer) => (this.stderr = (this.stderr + b.toString()).slice(-8000)));
    // A process that did not start or has ended answers nothing: `of` then fails with what it printed.
    this.child.on('error', (e) => (this.stderr += `\n${e.message}`));
    this.child.stdin.on('error', (e) => (this.stderr += `\n${e.message}`));
    this.child.on('close', () => {
      for (const answer of this.answers.splice(0)) answer(undefined);
    });
  }

  async of(folders: string[], tokens: number[][]): Promise<Logits[]> {
    const line = await new Promise<string | undefined>((resolve) => {
      this.answers.push(resolve);
      this.child.stdin.write(`${JSON.stringify(folders.map((folder) => ({ folder, tokens })))}\n`);
    });
    assert.ok(line !== undefined, `${LOGITS_SCRIPT} ended without answering:\n${this.stderr}`);
    const answer = JSON.parse(line) as Logits[] | { error: string };
    if (!Array.isArray(answer)) assert.fail(`${LOGITS_SCRIPT}: ${answer.error}`);
    return answer;
  }

  /** Ends the process (its input ends) and waits for it to exit. */
  async close(): Promise<void> {
    if (this.child.pid === undefined || this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('close', resolve));
    this.child.stdin.end();
    await exited;
  }
}

/** The largest |a - b| and the largest KL(softmax a || softmax b) over the positions. */
function compare(a: Logits, b: Logits): { worst: number; kl: number } {
  assert.deepEqual(a.shape, b.shape);
  const v = a.shape[2];
  let worst = 0;
  let kl = 0;
  for (let at = 0; at < a.logits.length; at += v) {
    const p = softmax(a.logits.slice(at, at + v));
    const q = softmax(b.logits.slice(at, at + v));
    let sum = 0;
    for (let i = 0; i < v; i++) {
      worst = Math.max(worst, Math.abs(a.logits[at + i] - b.logits[at + i]));
      sum += p[i] * (Math.log(p[i]) - Math.log(q[i]));
    }
    kl = Math.max(kl, sum);
  }
  return { worst, kl };
}

function softmax(x: number[]): number[] {
  const max = Math.max(...x);
  const e = x.map((v) => Math.exp(v - max));
  const total = e.reduce((s, v) => s + v, 0);
  return e.map((v) => v / total);
}

describe('Llama and Qwen3 Hugging Face folders imported and exported, against transformers', function () {
  this.timeout(300_000);
  let dir: string;
  let transformers: TransformersLogits;
  before(() => {
    dir = tempDir('hf-decoder');
    transformers = new TransformersLogits();
  });
  after(async () => {
    await transformers.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [fixture, architecture] of [
    ['llama-biases', 'LlamaForCausalLM'],
    ['qwen3-bf16-sharded', 'Qwen3ForCausalLM'],
  ] as const) {
    it(`${fixture}: transformers loads the export as ${architecture}, with its tokenizer, and its logits are the folder's`, async () => {
      const work = path.join(dir, fixture);
      const folder = path.join(work, 'model');
      cpSync(path.join(FIXTURES, fixture), folder, { recursive: true });
      const tokenizerConfig = '{"model_max_length": 128}';
      writeFileSync(path.join(folder, 'tokenizer_config.json'), tokenizerConfig);
      const configFile = path.join(work, 'run.yaml');
      writeFileSync(
        configFile,
        `model:\n  from_hf: model\ndata:\n  train: train.tok\n  seq_len: 16\ntraining:\n  max_steps: 1\n  batch_size_per_gpu: 1\n  learning_rate: 0.001\n`,
      );
      // The resolved config, as fsdp-train writes it for the runtime: the folder's keys, read by TypeScript.
      const loaded = loadRunConfig(readFileSync(configFile, 'utf8'), configFile);
      assert.ok(loaded.config, JSON.stringify(loaded.problems));
      const resolved = path.join(work, 'resolved.json');
      writeFileSync(resolved, JSON.stringify(loaded.config));
      const imported = spawnSync(nativeCli, ['--import-hf', resolved, folder, path.join(work, 'checkpoints')], {
        encoding: 'utf8',
      });
      assert.equal(imported.status, 0, imported.stderr);
      const checkpoint = path.join(work, 'checkpoints', 'step-00000000');
      assert.ok(existsSync(path.join(checkpoint, 'manifest.json')));

      const out = path.join(work, 'exported');
      const exported = await train(['export', checkpoint, '--hf', out, '--config', configFile]);
      assert.equal(exported.code, 0, exported.stderr);
      assert.match(exported.stdout, new RegExp(`written as a Hugging Face ${architecture} model`));
      assert.equal(readFileSync(path.join(out, 'tokenizer_config.json'), 'utf8'), tokenizerConfig);

      const tokens = [
        [1, 5, 9, 63, 0, 17, 42, 8],
        [60, 2, 2, 31, 7, 11, 50, 3],
      ];
      const [theirs, ours] = await transformers.of([folder, out], tokens);
      assert.equal(ours.architecture, architecture);
      const { worst, kl } = compare(ours, theirs);
      console.log(`      worst logit difference ${worst.toExponential(2)}, KL ${kl.toExponential(2)}`);
      assert.ok(worst <= 1e-4, `logits differ by ${worst}`);
      assert.ok(kl <= 1e-6, `KL ${kl}`);
    });

    it(`${fixture}: fsdp-train logits FOLDER (the runtime's forward) gives transformers' logits`, async () => {
      const folder = path.join(FIXTURES, fixture);
      const tokens = [3, 14, 15, 9, 26, 53, 58, 9, 7, 9, 32, 38];
      const r = spawnSync(process.execPath, [CLI, 'logits', folder], {
        input: `${tokens.join(' ')}\n`,
        encoding: 'utf8',
        maxBuffer: 1 << 28,
      });
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.trimEnd().split('\n');
      assert.equal(lines.length, tokens.length);
      const rows = lines.map((l) => JSON.parse(l) as number[]);
      const ours: Logits = { architecture, shape: [1, tokens.length, rows[0].length], logits: rows.flat() };
      const [theirs] = await transformers.of([folder], [tokens]);
      const { worst, kl } = compare(ours, theirs);
      console.log(
        `      native against transformers: worst logit difference ${worst.toExponential(2)}, KL ${kl.toExponential(2)}`,
      );
      assert.ok(worst <= 1e-4, `logits differ by ${worst}`);
      assert.ok(kl <= 1e-6, `KL ${kl}`);
    });
  }

  it('a run started from a Llama folder trains, exports with its tokenizer, and transformers gives its logits', async () => {
    const work = path.join(dir, 'trained');
    cpSync(path.join(FIXTURES, 'llama-biases'), path.join(work, 'model'), { recursive: true });
    writeFileSync(path.join(work, 'model', 'tokenizer_config.json'), '{"model_max_length": 128}');
    // Ids below the fixture's 64-token vocabulary.
    const ids = Uint16Array.from({ length: 4096 }, (_, i) => (i * 7 + (i % 13)) % 64);
    writeTokenFile(path.join(work, 'train.tok'), ids, 64, 'test');
    const configFile = path.join(work, 'run.yaml');
    writeFileSync(
      configFile,
      'name: from-llama\nmodel:\n  from_hf: model\ndata:\n  train: train.tok\n  seq_len: 16\n' +
        'training:\n  max_steps: 3\n  batch_size_per_gpu: 2\n  learning_rate: 0.001\n' +
        'launch:\n  threads_per_rank: 1\nlogging:\n  tensorboard: false\n',
    );
    const runDir = path.join(work, 'run');
    const trained = await train([configFile, '--run-dir', runDir]);
    assert.equal(trained.code, 0, trained.stderr);
    assert.match(trained.stderr, /starting from the Hugging Face model in/);
    assert.ok(existsSync(path.join(runDir, 'checkpoints', 'step-00000003', 'manifest.json')));

    const out = path.join(work, 'exported');
    const exported = await train(['export', runDir, '--hf', out]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(
      exported.stdout,
      /step-00000003 written as a Hugging Face LlamaForCausalLM model .*tokenizer_config\.json/,
    );
    const tokens = [3, 14, 15, 9, 26, 53, 58, 9];
    const r = spawnSync(process.execPath, [CLI, 'logits', runDir], { input: tokens.join(' '), encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const rows = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as number[]);
    const ours: Logits = { architecture: 'LlamaForCausalLM', shape: [1, tokens.length, 64], logits: rows.flat() };
    const [theirs, original] = await transformers.of([out, path.join(work, 'model')], [tokens]);
    const { worst, kl } = compare(ours, theirs);
    console.log(
      `      trained 3 steps, exported: worst logit difference ${worst.toExponential(2)}, KL ${kl.toExponential(2)}`,
    );
    assert.ok(worst <= 1e-4, `logits differ by ${worst}`);
    assert.ok(kl <= 1e-6, `KL ${kl}`);
    // And the 3 steps changed the model.
    assert.ok(compare(theirs, original).worst > 1e-3);
  });

  it('fsdp-train logits refuses what is not token ids, and a folder it cannot train by its key', () => {
    const run = (args: string[], input: string) =>
      spawnSync(process.execPath, [CLI, 'logits', ...args], { input, encoding: 'utf8' });
    const notIds = run([path.join(FIXTURES, 'llama-biases')], '1 two 3');
    assert.equal(notIds.status, 2);
    assert.match(notIds.stderr, /standard input: "two" is not a token id/);
    const gemma = path.join(dir, 'gemma');
    mkdirSync(gemma);
    writeFileSync(path.join(gemma, 'config.json'), '{"model_type": "gemma3_text"}');
    const refused = run([gemma], '1 2 3');
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /gemma.config\.json: model_type "gemma3_text"/);
  });
});
