import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { recogniseConfig } from '../../core/config/document-kind';
import { fileUri, LanguageServerClient, repoRoot } from './harness/language-server-client';

const ROOT = path.join(repoRoot, 'test', 'fixtures', 'public-configs');

// The two files current releases genuinely refuse (see SOURCES.md), with the errors they get.
const GENUINELY_WRONG: Record<string, string[]> = {
  'huggingface-accelerate/tests/test_configs/invalid_keys.yaml': [
    'schema.unknown-key 13:0 invalid_key',
    'schema.unknown-key 14:0 another_invalid_key',
  ],
  'huggingface-accelerate/tests/test_configs/0_28_0_mpi.yaml': ['schema.unknown-key 4:0 ipex_config'],
};

function configFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? configFiles(p) : /\.(json|ya?ml)$/.test(name) ? [p] : [];
  });
}

describe('public configs written by others: recognised, and no false errors', function () {
  this.timeout(60_000);
  const files = configFiles(ROOT);
  let server: LanguageServerClient;

  before(async () => {
    server = await LanguageServerClient.start();
  });
  after(async () => {
    await server?.stop();
  });

  it('there are at least 20 of them, each listed in SOURCES.md', () => {
    const sources = readFileSync(path.join(ROOT, 'SOURCES.md'), 'utf8');
    assert.ok(files.length >= 20, `only ${files.length} public configs`);
    for (const f of files)
      assert.ok(sources.includes(`| ${path.relative(ROOT, f)} |`), `${path.relative(ROOT, f)} is not in SOURCES.md`);
  });

  for (const file of configFiles(ROOT)) {
    const rel = path.relative(ROOT, file);
    it(`${rel}`, async () => {
      const text = readFileSync(file, 'utf8');
      assert.equal(
        recogniseConfig(file, text),
        file.endsWith('.json') ? 'deepspeed' : 'accelerate',
        'recognised by name or content',
      );
      const diagnostics = await server.open(fileUri(file), text);
      const errors = diagnostics
        .filter((d) => d.severity === 1)
        .map((d) => `${d.code} ${d.range.start.line}:${d.range.start.character} ${String(d.message).split(':')[0]}`);
      assert.deepEqual(errors, GENUINELY_WRONG[rel] ?? [], diagnostics.map((d) => d.message).join('\n'));
      await server.close(fileUri(file));
    });
  }
});
