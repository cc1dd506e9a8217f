// The Llama-family sample (issue 35 item 8), as a new user runs it: samples/prepare-llama-data.ts trains
// the sample's byte-level BPE on Debian's fortunes with the project's .venv and tokenizes the corpus
// through prepare's code; then samples/smollm2-135m-cpu.yaml, copied as written beside that data, trains
// two steps of its SmolLM2-135M shape with the real CLI and native runtime.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRunConfig } from '../../core/config/run-config';
import { decodeTokenFile } from '../../core/data/token-file';
import { LLAMA_SAMPLE_VOCAB, prepareLlamaData, type LlamaSampleData } from '../../samples/prepare-llama-data';
import { VENV_PYTHON } from '../harness/pytorch';

const root = path.resolve(__dirname, '../..');
const SAMPLE = path.join(root, 'samples', 'smollm2-135m-cpu.yaml');
const FORTUNES = '/usr/share/games/fortunes';

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [path.join(root, 'bin', 'fsdp-train.mjs'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('samples/smollm2-135m-cpu.yaml: its set-up and two steps of it (issue 35 item 8)', function () {
  this.timeout(15 * 60_000);
  let tmp: string;
  let data: LlamaSampleData;
  before(() => (tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-llama-sample-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it("the set-up trains the tokenizer and writes token files of the sample's vocabulary", async () => {
    assert.ok(existsSync(VENV_PYTHON), `${VENV_PYTHON}: the project's Python environment is made by the test set-up`);
    data = await prepareLlamaData({
      out: path.join(tmp, 'data'),
      corpus: FORTUNES,
      vocabSize: LLAMA_SAMPLE_VOCAB,
      python: VENV_PYTHON,
    });
    assert.ok(existsSync(data.tokenizer), 'tokenizer.json written');
    const vocab = JSON.parse(readFileSync(data.tokenizer, 'utf8')) as { model: { vocab: Record<string, number> } };
    assert.equal(Object.keys(vocab.model.vocab).length, LLAMA_SAMPLE_VOCAB);
    assert.equal(data.stats.eos.token, '<|endoftext|>');
    // The sample's model must have exactly the tokenizer's vocabulary.
    const { config } = loadRunConfig(readFileSync(SAMPLE, 'utf8'), SAMPLE);
    assert.equal(config?.model.vocab_size, data.stats.vocab_size);
    for (const split of ['train', 'val'] as const) {
      const file = path.join(data.dir, `${split}.tok`);
      const { header, tokens } = decodeTokenFile(readFileSync(file), file);
      // 16-bit ids hold an 8192-token vocabulary; 32-bit only past 65,536.
      assert.equal(header.dtype, data.stats.vocab_size > 65536 ? 'uint32' : 'uint16');
      assert.equal(header.vocabSize, data.stats.vocab_size);
      assert.equal(tokens.length, data.stats[split].tokens);
      let eos = 0;
      let max = 0;
      for (const t of tokens) {
        if (t === data.stats.eos.id) eos++;
        if (t > max) max = t;
      }
      assert.equal(eos, data.stats[split].documents, `${split}: one end-of-text token after each fortune`);
      assert.ok(max < data.stats.vocab_size, `${split}: ids below the vocabulary`);
    }
    // Each tenth fortune is validation, as the byte-level sample splits it.
    assert.equal(data.stats.val.documents, Math.floor((data.stats.train.documents + data.stats.val.documents) / 10));
  });

  it('trains two steps of the sample as written, from a loss near ln(vocabulary)', async function () {
    if (!data) this.skip();
    const config = path.join(tmp, path.basename(SAMPLE));
    copyFileSync(SAMPLE, config);
    const r = await run([config, '--set', 'training.max_steps=2', '--set', 'checkpointing.save_final=false']);
    assert.equal(r.code, 0, r.stderr + r.stdout.slice(-3000));
    const runs = path.join(tmp, 'runs');
    const [runDir] = readdirSync(runs);
    const events = readFileSync(path.join(runs, runDir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; step?: number; loss?: number; n_params?: number; status?: string });
    const start = events.find((e) => e.type === 'run_start');
    // SmolLM2-135M's body (30 layers of 576, 9 heads, 3 kv heads, 1536) with the sample's 8192-token embedding, tied.
    assert.equal(start?.n_params, 30 * (576 * (576 + 2 * 192 + 576) + 3 * 576 * 1536 + 2 * 576) + 576 + 8192 * 576);
    const steps = events.filter((e) => e.type === 'step');
    assert.deepEqual(
      steps.map((e) => e.step),
      [1, 2],
    );
    // A random-init model predicts close to uniformly over the vocabulary at its first step.
    assert.ok(Math.abs(steps[0].loss! - Math.log(LLAMA_SAMPLE_VOCAB)) < 0.5, `first loss ${steps[0].loss}`);
    assert.ok(steps.every((e) => Number.isFinite(e.loss)));
    assert.equal(events.at(-1)?.status, 'completed');
  });
});
