// Issue 19, item 2: config analysis is linear in the number of keys (it was quadratic: the yaml
// package's duplicate-key check and a per-problem key lookup), never throws on deep nesting, and
// stops at sizes no config reaches with one clear problem. CPU time, not wall time, is compared,
// so other tenants of a shared machine do not decide the outcome; the ratio for ten times the keys
// is about 10 when linear and about 100 when quadratic.
import assert from 'node:assert/strict';
import { analyseConfig } from '../../core/config/config-analysis';
import type { ConfigKind } from '../../core/config/document-kind';
import { shownProblems } from '../../core/config/shown-problems';
import { MAX_NESTING, MAX_PARSED_CHARS } from '../../core/config/unread-document';
import { largeConfig } from '../harness/large-configs';

function cpuMsOf(kind: ConfigKind, text: string, file: string): number {
  let best = Infinity;
  for (let i = 0; i < 2; i++) {
    const c0 = process.cpuUsage();
    analyseConfig(kind, text, file);
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

describe('config analysis at scale', function () {
  this.timeout(300_000);

  for (const shape of [
    'run-config-unknown-keys',
    'deepspeed-unknown-keys',
    'deepspeed-groups',
    'accelerate-mapping',
  ] as const) {
    it(`grows linearly with the number of keys: ${shape}`, () => {
      const small = largeConfig(shape, 4_000);
      const big = largeConfig(shape, 40_000);
      cpuMsOf(small.kind, small.text, small.file); // warm the schema compilers and the JIT
      const a = cpuMsOf(small.kind, small.text, small.file);
      const b = cpuMsOf(big.kind, big.text, big.file);
      assert.ok(
        b / Math.max(a, 1) < 30,
        `4,000 keys: ${a.toFixed(0)} ms of CPU, 40,000 keys: ${b.toFixed(0)} ms (ratio ${(b / a).toFixed(1)}; linear is ~10)`,
      );
    });
  }

  it('places the unknown keys of a 40,000-key config it lists at their own lines, and counts the rest', () => {
    const { kind, text, file } = largeConfig('run-config-unknown-keys', 40_000);
    const all = analyseConfig(kind, text, file).problems;
    const problems = all.filter((p) => p.code === 'schema.unknown-key');
    assert.equal(problems.length, 2_000, 'positions are worked out for twice what is shown');
    assert.equal(
      problems[1_999].range.start.line,
      text.split('\n').findIndex((l) => l.startsWith('  extra_1999:')),
    );
    assert.deepEqual(
      all.filter((p) => p.code === 'problems.more').map((p) => p.more),
      [{ count: 38_000, codes: ['schema.unknown-key'] }],
    );
    // What an editor or a terminal shows: the first 1,000, then how many more.
    const shown = shownProblems(all);
    assert.equal(shown.length, 1001);
    assert.match(shown[1000].message, /^39,000 more problems not shown \(schema\.unknown-key\)/);
  });

  const deep = 10_000;
  const cases: Array<[string, ConfigKind, string, string]> = [
    [
      'JSON, a DeepSpeed config',
      'deepspeed',
      '/cfg/ds_config.json',
      '{"train_batch_size": 8, "x": ' + '{"a": '.repeat(deep) + '1' + '}'.repeat(deep) + '}',
    ],
    [
      'JSON, a run config',
      'run-config',
      '/cfg/run.fsdp.json',
      '{"model": ' + '['.repeat(deep) + ']'.repeat(deep) + '}',
    ],
    [
      'YAML flow, a run config',
      'run-config',
      '/cfg/run.fsdp.yaml',
      'model: ' + '['.repeat(deep) + ']'.repeat(deep) + '\n',
    ],
    [
      'YAML blocks, an accelerate config',
      'accelerate',
      '/cfg/accelerate.yaml',
      'distributed_type: FSDP\nx:\n' +
        Array.from({ length: 2_000 }, (_, i) => ' '.repeat(i + 1) + 'k:').join('\n') +
        '\n',
    ],
  ];
  for (const [name, kind, file, text] of cases) {
    it(`gives nesting ${deep.toLocaleString('en-US')} deep a positioned problem instead of a stack overflow: ${name}`, () => {
      const problems = analyseConfig(kind, text, file).problems;
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0].code, 'syntax');
      assert.equal(
        problems[0].message,
        `nested more than ${MAX_NESTING} levels deep: no config is, and the file is not read further`,
      );
      assert.ok(
        problems[0].range.start.line > 0 || problems[0].range.start.character > 0,
        'points where the limit is passed',
      );
    });
  }

  it('reads nesting a real config has, with brackets inside strings and comments ignored', () => {
    const text =
      '{"a": "' + '['.repeat(500) + '", /* ' + '{'.repeat(500) + ' */ "b": ' + '['.repeat(50) + ']'.repeat(50) + '}';
    assert.deepEqual(
      analyseConfig('deepspeed', text, '/cfg/ds_config.json').problems.filter((p) => p.code === 'syntax'),
      [],
    );
    // Many flow collections one after another are not nesting; nor are brackets in a quoted YAML value or a comment.
    const yaml = `distributed_type: FSDP\nx: [${'{a: [1], b: {c: 2}}, '.repeat(300)}]\ny: "${'['.repeat(300)}" # ${'{'.repeat(300)}\nz: it's [fine]\n`;
    assert.deepEqual(
      analyseConfig('accelerate', yaml, '/cfg/accelerate.yaml').problems.filter((p) => p.code === 'syntax'),
      [],
    );
  });

  it(`stops at ${MAX_PARSED_CHARS.toLocaleString('en-US')} characters with one problem`, () => {
    const text = '# ' + 'x'.repeat(MAX_PARSED_CHARS) + '\nmodel: {}\n';
    const problems = analyseConfig('run-config', text, '/cfg/huge.fsdp.yaml').problems;
    assert.deepEqual(
      problems.map((p) => p.message),
      [
        `the file has ${text.length.toLocaleString('en-US')} characters, more than any config (checks stop at 16,777,216)`,
      ],
    );
  });
});
