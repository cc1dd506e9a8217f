// `model: { from_hf: DIR }` in the editor, through the real language server over stdio: a folder
// that is missing or holds a model the runtime cannot train is an error on the from_hf key, naming
// the folder's config.json key; a folder it can train gives the inline memory estimate its model,
// read from the folder's config.json (the lens says which).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LanguageServerClient } from './harness/language-server-client';

// HuggingFaceTB/SmolLM2-135M's config.json as published (https://huggingface.co/HuggingFaceTB/SmolLM2-135M/blob/main/config.json), the keys a reader looks at.
const SMOLLM2 = {
  architectures: ['LlamaForCausalLM'],
  hidden_act: 'silu',
  hidden_size: 576,
  intermediate_size: 1536,
  max_position_embeddings: 8192,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  tie_word_embeddings: true,
  vocab_size: 49152,
};

const config = (dir: string) => `model:
  from_hf: ${dir}
data:
  train: train.tok
  seq_len: 512
training:
  max_steps: 10
  batch_size_per_gpu: 1
  learning_rate: 0.001
`;

describe('language server over stdio: a run config whose model is a Hugging Face folder', function () {
  this.timeout(60_000);
  let root: string;
  let server: LanguageServerClient;
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'lsp-from-hf-'));
    mkdirSync(path.join(root, 'SmolLM2-135M'));
    writeFileSync(path.join(root, 'SmolLM2-135M', 'config.json'), JSON.stringify(SMOLLM2));
    mkdirSync(path.join(root, 'gemma-3-270m'));
    writeFileSync(
      path.join(root, 'gemma-3-270m', 'config.json'),
      JSON.stringify({ architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text' }),
    );
  });
  after(() => rmSync(root, { recursive: true, force: true }));
  beforeEach(async () => {
    server = await LanguageServerClient.start({ settings: {} });
  });
  afterEach(async () => server.stop());

  const open = async (name: string, text: string) => {
    const file = path.join(root, name);
    writeFileSync(file, text);
    const uri = pathToFileURL(file).href;
    return { uri, diagnostics: await server.open(uri, text) };
  };
  const fromHfLine = { line: 1, character: 2 };

  it('a missing folder: an error on from_hf naming the folder, and no estimate', async () => {
    const { uri, diagnostics } = await open('missing.fsdp.yaml', config('./nowhere'));
    const errors = diagnostics.filter((d) => d.severity === 1);
    assert.equal(errors.length, 1, JSON.stringify(diagnostics));
    assert.equal(errors[0].code, 'model.from-hf');
    assert.deepEqual(errors[0].range.start, fromHfLine);
    assert.ok(
      String(errors[0].message).includes(`${path.join(root, 'nowhere')}: no such folder`),
      String(errors[0].message),
    );
    assert.deepEqual(await server.codeLenses(uri), []);
  });

  it('a folder the runtime cannot train: the error names the config.json key', async () => {
    const { diagnostics } = await open('gemma.fsdp.yaml', config('./gemma-3-270m'));
    const errors = diagnostics.filter((d) => d.severity === 1);
    assert.equal(errors.length, 1, JSON.stringify(diagnostics));
    assert.deepEqual(errors[0].range.start, fromHfLine);
    assert.match(String(errors[0].message), /gemma-3-270m.config\.json: model_type "gemma3_text": Gemma 3/);
  });

  it("a folder it trains: no error on from_hf, and the estimate is the folder's model", async () => {
    const { uri, diagnostics } = await open('smollm2.fsdp.yaml', config('./SmolLM2-135M'));
    assert.deepEqual(
      diagnostics.filter((d) => d.code === 'model.from-hf' || String(d.code).startsWith('schema.')),
      [],
    );
    const lenses = await server.codeLenses(uri);
    assert.equal(lenses.length, 1);
    assert.match(lenses[0].command!.title, / — SmolLM2-135M$/);
    assert.match(
      lenses[0].command!.tooltip ?? '',
      // 134,515,008: the Hub's safetensors total for SmolLM2-135M.
      /for SmolLM2-135M \(134\.5 M parameters, SmolLM2-135M\/config\.json, named by model\.from_hf\)/,
    );
  });
});
