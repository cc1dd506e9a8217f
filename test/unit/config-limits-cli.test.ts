// Issue 19, item 2, at the command line: both CLIs give a 10,000-deep JSON or YAML config a
// positioned message and exit code 2 (they threw an uncaught RangeError, or printed "Maximum call
// stack size exceeded"), and fsdp-train lists the first 1,000 problems of a 40,000-key config and
// how many more there are.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { largeConfig } from '../harness/large-configs';

const root = path.join(__dirname, '..', '..');

function run(cli: 'fsdp-train' | 'fsdp-estimate', ...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'cli', `${cli}.ts`), ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('fsdp-train and fsdp-estimate: configs beyond any real size', function () {
  this.timeout(240_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-config-limits-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const deep = 10_000;
  const files: Array<[string, string, number]> = [
    [
      'ds_config.json',
      '{"train_micro_batch_size_per_gpu": 4, "x": ' + '{"a": '.repeat(deep) + '1' + '}'.repeat(deep) + '}',
      43 + 6 * 199 + 1,
    ],
    ['deep.fsdp.json', '{"model": ' + '['.repeat(deep) + ']'.repeat(deep) + '}', 10 + 199 + 1], // the root is the first level
    ['deep.fsdp.yaml', 'model: ' + '['.repeat(deep) + ']'.repeat(deep) + '\n', 7 + 199 + 1], // model: is the first level
  ];
  for (const [name, text, column] of files) {
    for (const cli of ['fsdp-train', 'fsdp-estimate'] as const) {
      if (cli === 'fsdp-train' && name.startsWith('ds_')) continue; // fsdp-train reads run configs only
      it(`${cli}: ${name} nested ${deep.toLocaleString('en-US')} deep is refused with its line and column`, () => {
        const file = path.join(dir, name);
        writeFileSync(file, text);
        const r = run(cli, file, ...(cli === 'fsdp-train' ? ['--plan'] : []));
        assert.equal(r.code, 2, r.err);
        assert.doesNotMatch(r.err, /RangeError|Maximum call stack/);
        assert.match(r.err, new RegExp(`${name.replace(/\./g, '\\.')}:1:${column} nested more than 200 levels deep`));
      });
    }
  }

  it('fsdp-train: lists the first 1,000 problems of a 40,000-key config, then how many more', () => {
    const { text } = largeConfig('run-config-unknown-keys', 40_000);
    const file = path.join(dir, 'large.fsdp.yaml');
    writeFileSync(file, text);
    const r = run('fsdp-train', file, '--plan');
    assert.equal(r.code, 2);
    const lines = r.err.trim().split('\n');
    assert.equal(lines.length, 1001);
    assert.match(lines[0], /large\.fsdp\.yaml:13:3 training\.extra_0: unknown key "extra_0"/);
    assert.match(lines[1000], /39,000 more problems not shown \(schema\.unknown-key\)/);
  });
});
