// Every config in samples/ — what a new user starts from — opened in the real language server over
// stdio, as the editor opens it: recognised as the kind it is meant to be, with no diagnostic at all
// (errors, warnings, hints) but the one it shows on purpose, and, for the kinds with a memory estimate, its estimate shown, fitting. The SSH
// and SLURM samples name placeholder hosts a user edits; they must be clean all the same.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { recogniseConfig, type ConfigKind } from '../../core/config/document-kind';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';

const SAMPLES = path.join(repoRoot, 'samples');

/** The samples and the kind each must be recognised as; a config added to samples/ must be listed here. */
const EXPECTED: Record<string, ConfigKind> = {
  'tiny-cpu.yaml': 'run-config',
  'smollm2-135m-cpu.yaml': 'run-config',
  'tiny-ssh.yaml': 'run-config',
  'tiny-slurm.yaml': 'run-config',
  'ds_config.json': 'deepspeed',
  'accelerate-fsdp.yaml': 'accelerate',
  'fsdp2-torchrun.fsdp-launch.yaml': 'launch-spec',
  'ddp-python.fsdp-launch.yaml': 'launch-spec',
};

/**
 * What a sample is shown on purpose: ds_config.json keeps comments that deepspeed reads (it is launched
 * with deepspeed), and the editor says once, at the first, that accelerate and the Trainer would not.
 */
const EXPECTED_DIAGNOSTICS: Record<string, string[]> = {
  'ds_config.json': [
    '1:1 deepspeed.json-comments a comment in a JSON config: DeepSpeed reads it (hjson), but accelerate and the Hugging Face Trainer read the file with json.load, which refuses comments (set fsdp.deepspeed.launchedWith to say how you launch)',
  ],
};

/** The config files in samples/ (not the folders the sample runs and data preparation write). */
function sampleConfigs(): string[] {
  return readdirSync(SAMPLES)
    .filter((name) => /\.(json|ya?ml|toml)$/.test(name))
    .sort();
}

describe('samples/: every config is clean in the language server', function () {
  this.timeout(120_000);
  let server: LanguageServerClient;
  before(async () => {
    server = await LanguageServerClient.start({ settings: {} });
  });
  after(async () => server?.stop());

  it('lists every config file in samples/ (a new one must be added here, so it is checked)', () => {
    assert.deepEqual(sampleConfigs(), Object.keys(EXPECTED).sort());
  });

  for (const [name, kind] of Object.entries(EXPECTED)) {
    it(`${name}: recognised as ${kind}, no diagnostic${kind === 'launch-spec' ? '' : ', its memory estimate shown'}`, async () => {
      const file = path.join(SAMPLES, name);
      const text = readFileSync(file, 'utf8');
      assert.equal(recogniseConfig(file, text), kind);
      const uri = pathToFileURL(file).href;
      const diagnostics = await server.open(uri, text);
      assert.deepEqual(
        diagnostics.map((d) => `${d.range.start.line + 1}:${d.range.start.character + 1} ${d.code} ${d.message}`),
        EXPECTED_DIAGNOSTICS[name] ?? [],
      );
      if (kind !== 'launch-spec') {
        const titles = (await server.codeLenses(uri)).map((l) => l.command?.title ?? '');
        assert.ok(
          titles.some((t) => /^≈ [\d.]+ [KMG]iB \/ (rank|GPU)\b.* — fits /.test(t)),
          `no memory estimate that fits: ${JSON.stringify(titles)}`,
        );
      }
      await server.close(uri);
    });
  }
});
