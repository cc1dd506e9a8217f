// Issue 35 item 2: inline memory on a Llama-family run config, through the real language server:
// the CodeLens estimate counts the family's parameters (runConfigShape, held to the runtime's
// ParamLayout in test/native/param-count.test.ts), and a family key on gpt2 is refused at the key.
import assert from 'node:assert/strict';
import { loadRunConfig } from '../../core/config/run-config';
import { parameterCounts, runConfigShape } from '../../core/memory/model-shape';
import { LanguageServerClient } from './harness/language-server-client';

const LLAMA = `model:
  architecture: llama
  d_model: 256
  n_layers: 4
  n_heads: 8
  n_kv_heads: 2
  vocab_size: 8192
  max_seq_len: 128
  intermediate_size: 688
  tie_embeddings: false
  rope_theta: 500000
data: {train: data/train.tok}
training: {batch_size_per_gpu: 4, max_steps: 10, learning_rate: 0.001}
fsdp: {sharding_strategy: NO_SHARD}
`;

describe('language server over stdio: a Llama-family run config (issue 35 item 2)', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;
  beforeEach(async () => {
    server = await LanguageServerClient.start({ settings: {} });
  });
  afterEach(async () => server.stop());

  it("puts the estimate on the model section, its parameters the family's count", async () => {
    const uri = 'file:///w/llama.fsdp.yaml';
    const diagnostics = await server.open(uri, LLAMA);
    assert.ok(!diagnostics.some((d) => String(d.code).startsWith('schema.')), JSON.stringify(diagnostics));
    const lenses = await server.codeLenses(uri);
    assert.equal(lenses.length, 1);
    const tooltip = lenses[0].command!.tooltip ?? '';
    // float32 parameters on one rank: 4 bytes each.
    const params = parameterCounts(runConfigShape(loadRunConfig(LLAMA, '/w/llama.fsdp.yaml').config!.model)).total;
    assert.ok(params > 4_000_000, `${params}`);
    const mib = ((params * 4) / 2 ** 20).toFixed(1);
    assert.match(
      tooltip,
      new RegExp(`\\(params ${mib.replace('.', '\\.')} · grads ${mib.replace('.', '\\.')} ·`),
      tooltip,
    );
  });

  it("completes only the keys that mean something for the model's architecture", async () => {
    const labels = async (text: string) => {
      const uri = `file:///w/complete-${text.length}.fsdp.yaml`;
      await server.open(uri, text);
      return (await server.completion(uri, { line: 1, character: 2 })).map((i) => String(i.label));
    };
    const llama = await labels(LLAMA.replace('  d_model: 256\n', '  \n'));
    assert.ok(
      llama.includes('d_model') && llama.includes('head_dim') && llama.includes('rope_scaling'),
      llama.join(' '),
    );
    assert.ok(!llama.includes('mlp_ratio') && !llama.includes('dropout'), llama.join(' '));
    const gpt2 = await labels('model:\n  \n  n_layers: 2\n');
    assert.ok(gpt2.includes('mlp_ratio') && gpt2.includes('architecture'), gpt2.join(' '));
    assert.ok(!gpt2.includes('n_kv_heads') && !gpt2.includes('rope_theta'), gpt2.join(' '));
  });

  it('refuses a family key on a gpt2 model at the key, with a fix that removes it', async () => {
    const uri = 'file:///w/gpt.fsdp.yaml';
    // The llama config less its architecture (so gpt2) and intermediate_size / tie_embeddings.
    const text = LLAMA.replace('  architecture: llama\n', '').replace(
      '  intermediate_size: 688\n  tie_embeddings: false\n',
      '',
    );
    const diagnostics = await server.open(uri, text);
    const only = diagnostics.filter((d) => d.code === 'schema.only-when');
    assert.deepEqual(
      only.map((d) => [d.range.start.line, d.message]),
      [
        [4, 'model.n_kv_heads: only for model.architecture llama or qwen3, not gpt2 (the default)'],
        [7, 'model.rope_theta: only for model.architecture llama or qwen3, not gpt2 (the default)'],
      ],
    );
  });
});
