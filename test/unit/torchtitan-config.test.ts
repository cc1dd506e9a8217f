import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { applyConfigEdits } from '../../core/config/config-edits';
import { analyseConfig } from '../../core/config/config-analysis';
import { recogniseConfig } from '../../core/config/document-kind';
import { parseSourceDocument } from '../../core/config/source-document';
import { TORCHTITAN_RELEASE } from '../../core/config/torchtitan-config';

const repoRoot = path.resolve(__dirname, '../..');
const FIXTURES = path.join(repoRoot, 'test', 'fixtures', 'torchtitan');
const realFiles = readdirSync(FIXTURES).filter((f) => f.endsWith('.toml'));
const read = (f: string) => readFileSync(path.join(FIXTURES, f), 'utf8');
const check = (text: string, file = 'job.toml') => analyseConfig('torchtitan', text, file).problems;
const show = (ps: ReturnType<typeof check>) =>
  ps.map((p) => `${p.severity} ${p.code} ${p.path.join('.')}: ${p.message}`).join('\n');

describe('torchtitan job configs (TOML)', () => {
  it(`reads torchtitan ${TORCHTITAN_RELEASE}'s own TOML files without an error or a warning`, () => {
    assert.ok(realFiles.length >= 9, 'the fixtures from torchtitan are there');
    for (const f of realFiles) {
      const text = read(f);
      assert.equal(recogniseConfig(`/w/${f}`, text), 'torchtitan', `${f} is recognised by its tables`);
      const problems = check(text, `/w/${f}`).filter((p) => p.severity === 'error' || p.severity === 'warning');
      assert.deepEqual(problems, [], `${f}:\n${show(problems)}`);
    }
  });

  it('says which keys a custom config module must define instead of refusing them (flux extends JobConfig)', () => {
    const problems = check(read('flux-flux_dev_model.toml'));
    assert.ok(
      problems.some(
        (p) =>
          p.code === 'schema.unknown-key' &&
          p.path.join('.') === 'training.img_size' &&
          p.severity === 'information' &&
          /torchtitan\.models\.flux\.job_config/.test(p.message),
      ),
      show(problems),
    );
    const without = read('flux-flux_dev_model.toml').replace(/^custom_config_module.*$/m, '');
    assert.ok(
      check(without).some((p) => p.code === 'schema.unknown-key' && p.severity === 'error'),
      'without the module the same keys are errors',
    );
  });

  it('catches mistakes planted in the real files, each at its line', () => {
    const cases: Array<[file: string, from: string, to: string, code: string, line: string]> = [
      [
        'llama3-llama3_70b.toml',
        'tensor_parallel_degree = 8',
        'tensor_parallel_degre = 8',
        'schema.unknown-key',
        'tensor_parallel_degre = 8',
      ],
      [
        'llama3-llama3_8b.toml',
        'local_batch_size = 1',
        'local_batch_size = "1"',
        'schema.type',
        'local_batch_size = "1"',
      ],
      [
        'llama3-llama3_405b.toml',
        'data_parallel_shard_degree = -1',
        '# fsdp-studio: nproc=8 nnodes=8\ndata_parallel_shard_degree = 4',
        'torchtitan.world-size',
        'data_parallel_shard_degree = 4',
      ],
      [
        'deepseek_v3-deepseek_v3_16b.toml',
        'mode = "selective"',
        'mode = "selectiv"',
        'schema.enum',
        'mode = "selectiv"',
      ],
      [
        'qwen3-qwen3_32b.toml',
        '[training]',
        '[training]\nglobal_batch_size = 3',
        'torchtitan.global-batch',
        'global_batch_size = 3',
      ],
      ['llama3-debug_model.toml', '[compile]', '[compil]', 'schema.unknown-key', '[compil]'],
    ];
    for (const [file, from, to, code, line] of cases) {
      const original = read(file);
      assert.ok(original.includes(from), `${file} has "${from}"`);
      const text = original.replace(from, to);
      const problem = check(text).find((p) => p.code === code);
      assert.ok(problem, `${file} with "${to}": no ${code}\n${show(check(text))}`);
      assert.ok(
        text.split('\n')[problem.range.start.line].trim().startsWith(line),
        `${code} points at its line: ${text.split('\n')[problem.range.start.line]}`,
      );
    }
  });

  it('suggests the key meant, and the quick fix renames it in place', () => {
    const text = read('llama3-llama3_70b.toml').replace('tensor_parallel_degree = 8', 'tensor_parallel_degre = 8');
    const p = check(text).find((x) => x.code === 'schema.unknown-key')!;
    assert.equal(p.suggestion, 'tensor_parallel_degree');
    const fixed = applyConfigEdits(text, p.fixes![0].edits, { kind: 'toml' });
    assert.equal(fixed, read('llama3-llama3_70b.toml'));
  });
});

describe('TOML documents with source positions', () => {
  const text = '# c\ntitle = "x"\n[a]\nx = 1 # n\ny.z = "s"\nt = { u = 2 }\n\n[[b.c]]\nq = [1, 2]\n[[b.c]]\nq = [3]\n';
  const doc = parseSourceDocument(text, 'toml');
  const at = (r: { start: { line: number; character: number }; end: { line: number; character: number } }) => {
    const lines = text.split('\n');
    return lines[r.start.line].slice(r.start.character, r.start.line === r.end.line ? r.end.character : undefined);
  };

  it('parses to the value tomllib gives', () => {
    assert.deepEqual(doc.value, {
      title: 'x',
      a: { x: 1, y: { z: 's' }, t: { u: 2 } },
      b: { c: [{ q: [1, 2] }, { q: [3] }] },
    });
    assert.deepEqual(doc.syntaxErrors, []);
  });

  it('points at keys, values, tables, dotted keys, inline tables and arrays of tables', () => {
    assert.equal(at(doc.rangeOf(['a', 'x'], 'key')), 'x');
    assert.equal(at(doc.rangeOf(['a', 'x'])), '1');
    assert.equal(at(doc.rangeOf(['a', 'y', 'z'])), '"s"');
    assert.equal(at(doc.rangeOf(['a', 't', 'u'])), '2');
    assert.equal(at(doc.rangeOf(['a'], 'key')), 'a');
    assert.equal(at(doc.rangeOf(['b', 'c', 1, 'q', 0])), '3');
    assert.equal(at(doc.rangeOf(['a', 'missing'])), 'a', 'a missing key points at its table');
    assert.ok(doc.has(['b', 'c', 1, 'q']) && !doc.has(['b', 'c', 2]));
  });

  it('locates the cursor in a header, on a key being typed and on a value, even where the file does not parse', () => {
    const typing = '[parallelism]\ntensor_par\n[activation_checkpoint]\nmode = "sel\n[quantize.li';
    const d = parseSourceDocument(typing, 'toml');
    assert.equal(d.syntaxErrors.length, 1);
    const offset = (s: string) => typing.indexOf(s) + s.length;
    assert.deepEqual(d.locate(offset('tensor_par')), {
      path: ['parallelism'],
      part: 'key',
      word: { text: 'tensor_par', start: typing.indexOf('tensor_par'), end: offset('tensor_par') },
    });
    const value = d.locate(offset('"sel'));
    assert.deepEqual([value.path, value.part], [['activation_checkpoint', 'mode'], 'value']);
    const header = d.locate(typing.length);
    assert.deepEqual([header.path, header.part, header.word.text], [['quantize'], 'key', 'li']);
  });

  it('reports a syntax error where it is', () => {
    const bad = parseSourceDocument('[a]\nx = 1\nx = 2\n', 'toml');
    assert.equal(bad.value, undefined);
    assert.equal(bad.syntaxErrors.length, 1);
    assert.equal(bad.syntaxErrors[0].range.start.line, 2);
    assert.match(bad.syntaxErrors[0].message, /multiple times/);
  });
});

describe('TOML edits (what quick fixes and the memory panel write)', () => {
  const text =
    '# job\n[training]\nlocal_batch_size = 8  # per rank\nsteps = 10\n\n[parallelism]\ntensor_parallel_degree = 2\n';
  const edit = (...edits: Parameters<typeof applyConfigEdits>[1]) => applyConfigEdits(text, edits, { kind: 'toml' });

  it('replaces a value in place, keeping its comment', () => {
    assert.equal(edit({ kind: 'set', path: ['training', 'local_batch_size'], value: 4 }), text.replace('= 8', '= 4'));
  });

  it('adds a key after the last key of its table, a table at the end, and a root key before the first table', () => {
    assert.equal(
      edit({ kind: 'set', path: ['training', 'seq_len'], value: 4096 }),
      text.replace('steps = 10\n', 'steps = 10\nseq_len = 4096\n'),
    );
    assert.equal(
      edit({ kind: 'set', path: ['compile', 'enable'], value: true }),
      `${text}\n[compile]\nenable = true\n`,
    );
    assert.equal(
      edit({ kind: 'set', path: ['quantize', 'linear', 'float8', 'filter_fqns'], value: ['output'] }),
      `${text}\n[quantize.linear.float8]\nfilter_fqns = ["output"]\n`,
    );
    assert.equal(
      applyConfigEdits('[a]\nx = 1\n', [{ kind: 'set', path: ['v'], value: 'y' }], { kind: 'toml' }),
      'v = "y"\n\n[a]\nx = 1\n',
    );
  });

  it('removes a line and renames a key', () => {
    assert.equal(edit({ kind: 'remove', path: ['training', 'steps'] }), text.replace('steps = 10\n', ''));
    assert.equal(
      edit({ kind: 'rename', path: ['parallelism', 'tensor_parallel_degree'], to: 'pipeline_parallel_degree' }),
      text.replace('tensor_parallel_degree', 'pipeline_parallel_degree'),
    );
  });
});

describe('the torchtitan schema is generated from torchtitan itself', function () {
  this.timeout(180_000);

  it(`equals what scripts/schemas/torchtitan_schema.py makes from torchtitan ${TORCHTITAN_RELEASE}'s job_config.py`, () => {
    // Any Python with pip: the script reads the release's source with ast (from the installed
    // package if it is that release, else from its wheel, which pip downloads from PyPI).
    const python = process.env.FSDP_PYTHON ?? 'python3';
    const r = spawnSync(python, [path.join(repoRoot, 'scripts', 'schemas', 'torchtitan_schema.py'), '--check'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, new RegExp(`matches torchtitan ${TORCHTITAN_RELEASE.replace(/\./g, '\\.')}`));
  });

  it('fails when the committed schema and the release differ', () => {
    const python = process.env.FSDP_PYTHON ?? 'python3';
    const r = spawnSync(
      python,
      [path.join(repoRoot, 'scripts', 'schemas', 'torchtitan_schema.py'), '--check', '--version', '0.2.1'],
      { encoding: 'utf8' },
    );
    assert.notEqual(r.status, 0, 'another release gives another schema (its title names the version at least)');
    assert.match(r.stderr, /differs from what torchtitan 0\.2\.1/);
  });
});
