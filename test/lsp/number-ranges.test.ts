// Issue 26, item 1, in the editor: a number beyond its key's schema maximum is an error at the
// value, with the limit — the same refusal as the runtime's (test/native/hardening-numbers.test.ts).
import assert from 'node:assert/strict';
import { LanguageServerClient } from './harness/language-server-client';

describe('language server over stdio: numbers beyond their range', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;
  before(async () => (server = await LanguageServerClient.start()));
  after(async () => server?.stop());

  for (const [key, raw, limit] of [
    ['batch_size_per_gpu', '4294967300', '65536'],
    ['max_steps', '4294967306', '1000000000'],
    ['batch_size_per_gpu', '9007199254740992', '65536'],
  ]) {
    it(`training.${key}: ${raw} is an error at the value: must be <= ${limit}`, async () => {
      const text =
        `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}\ndata: {train: t.tok}\ntraining:\n  batch_size_per_gpu: 2\n  max_steps: 10\n  learning_rate: 0.001\n  ${key}: ${raw}\n`.replace(
          new RegExp(`  ${key}: \\d+\\n`),
          '',
        );
      const d = await server.open(`file:///w/range-${key}-${raw}.fsdp.yaml`, text);
      const line = text.split('\n').findIndex((l) => l.includes(raw));
      assert.deepEqual(
        d.map((x) => [x.code, x.severity, x.range.start.line, x.message]),
        [['schema.range', 1, line, `training.${key}: must be <= ${limit}, got ${raw}`]],
      );
    });
  }
});
