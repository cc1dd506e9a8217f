// Issue 16's "done": with meta-llama/Llama-3.1-8B in the Hugging Face cache of the user's HOME,
// `# fsdp-studio: model=meta-llama/Llama-3.1-8B` gives an estimate for 8.03 B parameters, and the
// lens says which model and from where. Through the real language server over stdio, with HOME
// pointing at a temporary folder holding a cache laid out as huggingface_hub lays it out.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';

const LLAMA = readFileSync(
  path.join(repoRoot, 'test', 'fixtures', 'hf-models', 'meta-llama--Llama-3.1-8B', 'config.json'),
  'utf8',
);
const DS = `// fsdp-studio: model=meta-llama/Llama-3.1-8B gpu=H100 nproc=8
{
  "train_micro_batch_size_per_gpu": 1,
  "bf16": { "enabled": true },
  "zero_optimization": { "stage": 3 }
}
`;

describe('language server over stdio: a Hugging Face model from the local cache', function () {
  this.timeout(60_000);
  let home: string;
  let server: LanguageServerClient;
  const saved: Record<string, string | undefined> = {};

  before(() => {
    home = mkdtempSync(path.join(os.tmpdir(), 'fsdp-home-'));
    const repo = path.join(home, '.cache', 'huggingface', 'hub', 'models--meta-llama--Llama-3.1-8B');
    const commit = 'd04e592bb4f6aa9cfee91e2e20afa771667e1d4b';
    mkdirSync(path.join(repo, 'snapshots', commit), { recursive: true });
    mkdirSync(path.join(repo, 'refs'));
    writeFileSync(path.join(repo, 'refs', 'main'), commit);
    writeFileSync(path.join(repo, 'snapshots', commit, 'config.json'), LLAMA);
    mkdirSync(path.join(home, 'project'));
    // The server inherits this environment: HOME is the temporary one, no other cache is named.
    for (const k of ['HOME', 'HF_HOME', 'HF_HUB_CACHE', 'XDG_CACHE_HOME']) saved[k] = process.env[k];
    process.env.HOME = home;
    for (const k of ['HF_HOME', 'HF_HUB_CACHE', 'XDG_CACHE_HOME']) delete process.env[k];
  });
  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(home, { recursive: true, force: true });
  });
  beforeEach(async () => {
    server = await LanguageServerClient.start({ settings: {} });
  });
  afterEach(async () => server.stop());

  const uriOf = (name: string) => pathToFileURL(path.join(home, 'project', name)).href;

  it('estimates Llama 3.1 8B (8.03 B parameters) and says it came from the Hugging Face cache', async () => {
    const uri = uriOf('ds_config.json');
    writeFileSync(new URL(uri), DS);
    await server.open(uri, DS);
    const lenses = await server.codeLenses(uri);
    assert.equal(lenses.length, 1);
    assert.match(lenses[0].command!.title, / — meta-llama\/Llama-3\.1-8B$/);
    assert.match(
      lenses[0].command!.tooltip ?? '',
      / — for meta-llama\/Llama-3\.1-8B \(8\.03 B parameters, Hugging Face cache\)\n/,
    );
  });

  it('finds the model a training script beside the config names', async () => {
    const uri = uriOf('ds_config.json');
    const text = DS.split('\n').slice(1).join('\n');
    writeFileSync(new URL(uri), text);
    writeFileSync(
      path.join(home, 'project', 'train.sh'),
      'deepspeed train.py --deepspeed ds_config.json \\\n  --model_name_or_path meta-llama/Llama-3.1-8B\n',
    );
    await server.open(uri, text);
    const tooltip = (await server.codeLenses(uri))[0].command!.tooltip ?? '';
    assert.match(
      tooltip,
      /for meta-llama\/Llama-3\.1-8B \(8\.03 B parameters, Hugging Face cache, named by train\.sh:2\)\n/,
    );
    rmSync(path.join(home, 'project', 'train.sh'));
  });

  it('warns at the comment when the model named is in no cache, instead of estimating another', async () => {
    const uri = uriOf('other.json');
    const text = DS.replace('Llama-3.1-8B', 'Llama-3.1-405B').replace('ds_config', 'other');
    writeFileSync(new URL(uri), text);
    const diagnostics = await server.open(uri, text);
    const warning = diagnostics.find((d) => d.code === 'memory.no-estimate');
    assert.ok(warning, JSON.stringify(diagnostics));
    assert.match(
      String(warning.message),
      /^no memory estimate: fsdp-studio comment|model "meta-llama\/Llama-3\.1-405B" is not a preset/,
    );
    assert.deepEqual(await server.codeLenses(uri), []);
  });
});
