// Large YAML documents are read by js-yaml's event parser (core/config/large-yaml-document.ts),
// smaller ones by the `yaml` package's CST (yaml-document.ts): the two must give every check the
// same value, the same duplicate-key problems and the same positions, so that a problem reads the
// same whatever the size of its file. Each text below is read both ways and compared at every path.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { readLargeYaml } from '../../core/config/large-yaml-document';
import {
  LARGE_YAML_CHARS,
  parseSourceDocument,
  type ConfigPath,
  type SourceDocument,
} from '../../core/config/source-document';
import { YamlSourceDocument } from '../../core/config/yaml-document';
import { largeConfig } from '../harness/large-configs';

const root = path.resolve(__dirname, '../..');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? yamlFiles(file) : /\.ya?ml$/.test(name) ? [file] : [];
  });
}

/** Every path of a parsed value, depth first. */
function pathsOf(value: unknown, at: Array<string | number> = [], out: ConfigPath[] = []): ConfigPath[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...at, i], out));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) pathsOf(v, [...at, k], out);
  return out;
}

function assertSame(text: string, what: string, version: '1.1' | '1.2' = '1.2'): void {
  const large = readLargeYaml(text, version);
  assert.ok(large, `${what}: js-yaml did not read it`);
  const small: SourceDocument = new YamlSourceDocument(text, version);
  assert.deepEqual(large.value, small.value, `${what}: value`);
  assert.deepEqual(large.syntaxErrors, small.syntaxErrors, `${what}: problems`);
  for (const p of [...pathsOf(small.value), ['no-such-key'], [...pathsOf(small.value).at(-1)!, 'absent']]) {
    const at = `${what}: ${p.join('.') || '(root)'}`;
    assert.equal(large.has(p), small.has(p), `${at}: has`);
    assert.deepEqual(large.rangeOf(p, 'key'), small.rangeOf(p, 'key'), `${at}: key range`);
    assert.deepEqual(large.rangeOf(p, 'value'), small.rangeOf(p, 'value'), `${at}: value range`);
    assert.deepEqual(large.valueSpan(p), small.valueSpan(p), `${at}: value span`);
  }
  for (let offset = 0; offset <= text.length; offset += Math.max(1, Math.floor(text.length / 400))) {
    assert.deepEqual(large.locate(offset), small.locate(offset), `${what}: locate(${offset})`);
  }
}

describe('large YAML documents read by js-yaml are read as the yaml package reads them', () => {
  const files = [
    path.join(root, 'samples', 'tiny-cpu.yaml'),
    ...yamlFiles(path.join(root, 'test', 'fixtures', 'public-configs')).filter((f) => !/accelerate/.test(f)),
  ];
  for (const file of files) {
    it(path.relative(root, file), () => {
      const text = readFileSync(file, 'utf8');
      if (readLargeYaml(text)) assertSame(text, path.relative(root, file));
      else
        assert.ok(
          /[!&*]|^%/m.test(text),
          'only tags, anchors, aliases or directives send a document back to the yaml package',
        );
    });
  }

  const cases: Record<string, string> = {
    'flow and block collections, quotes, empty values, comments':
      'model: {d_model: 64, n_layers: 2}  # flow\ndata:\n  train: "a b.tok"\n  val: \'c.tok\'\n  empty:\ntraining:\n  betas: [0.9, 0.95]\n  nested:\n    - x\n    - {y: 1, z: []}\n    - []\n    - {}\nlast: 1\n',
    'scalars of the core schema':
      'a: 0o17\nb: 017\nc: 1e3\nd: .inf\ne: -.Inf\nf: 1.\ng: +.5\nh: 0x1F\ni: ~\nj: Null\nk: TRUE\nl: 2001-12-14\nm: 1e\nn: 1_000\no: 0b11\np: 9007199254740993\nq: -0\nr: yes\n',
    'keys the core schema resolves': '1: a\ntrue: b\n0x10: d\n.5: e\n"2": f\n',
    'duplicate keys': 'a: 1\nb: 2\na: 3\nc:\n  d: 1\n  d: 2\n',
    'a document marker and scalars over several lines':
      '---\na: plain words\n  over two lines\nb: "quoted\n  too"\nc:\n  - x\n  - y:\n    z:\nd: 1\n',
    'a last key without a value': 'a:\n  b: 1\n  c:\n',
    'a scalar document': 'just text\n',
    'an empty document': '# nothing but a comment\n',
  };
  for (const [name, text] of Object.entries(cases)) it(name, () => assertSame(text, name));

  // YAML 1.1, as accelerate's configs are read (PyYAML): js-yaml's YAML 1.1 schema, or the yaml
  // package for the forms where the two are not known to agree.
  const accelerateFiles = yamlFiles(path.join(root, 'test', 'fixtures', 'public-configs')).filter((f) =>
    /accelerate/.test(f),
  );
  assert.ok(accelerateFiles.length > 0, 'the public accelerate configs are in test/fixtures/public-configs');
  for (const file of [path.join(root, 'samples', 'accelerate-fsdp.yaml'), ...accelerateFiles]) {
    it(`YAML 1.1: ${path.relative(root, file)}`, () => {
      const text = readFileSync(file, 'utf8');
      if (readLargeYaml(text, '1.1')) assertSame(text, path.relative(root, file), '1.1');
      // fp8.yaml ends with an indented comment (see commentEndsBlock); every other one is read here.
      else assert.match(text, /\n +#[^\n]*\n?$/, 'sent back to the yaml package without a reason');
    });
  }
  const cases11: Record<string, string> = {
    'YAML 1.1 booleans and nulls':
      'a: yes\nb: no\nc: on\nd: off\ne: Yes\nf: NO\ng: y\nh: n\ni: True\nj: FALSE\nk: ~\nl: null\nm:\nn: Off\n',
    'YAML 1.1 numbers':
      'a: 1\nb: -2\nc: 1.5\nd: .5\ne: 1.25\nf: -0.001\ng: 0x1F\nh: .inf\ni: -.Inf\nj: .NaN\nk: +7\nl: 0\n',
    'YAML 1.1 keys the schema resolves': 'yes: a\nno: b\non: c\n1: d\ntrue: e\n"off": f\n',
    'YAML 1.1 duplicate keys (a warning: PyYAML keeps the last)': 'a: 1\nb: 2\na: 3\nyes: 1\ntrue: 2\n',
    'an accelerate config':
      'compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: false\n  fsdp_sharding_strategy: 1\n  fsdp_use_orig_params: true\nmixed_precision: bf16\nnum_processes: 8\nuse_cpu: no\n',
  };
  for (const [name, text] of Object.entries(cases11)) it(name, () => assertSame(text, name, '1.1'));

  it('YAML 1.1 forms where the readers may differ go to the yaml package', () => {
    for (const text of [
      'a: 2001-12-14\n',
      'a: 1:20\n',
      'a: 017\n',
      'a: 0b11\n',
      'a: 1_000\n',
      'a: 1e3\n',
      'a: 1.0e-3\n',
      'a: {x: 1}\nb:\n  <<: {y: 2}\n',
    ])
      assert.equal(readLargeYaml(text, '1.1'), undefined, text);
    // An indented comment that ends a block collection: the yaml package's ranges run over it.
    for (const version of ['1.1', '1.2'] as const) {
      assert.equal(readLargeYaml('a:\n  b: 1\n  # c\nd: 2\n', version), undefined, version);
      assert.ok(readLargeYaml('a:\n  # c\n  b: 1\nd: 2\n', version), `${version}: a comment between keys`);
    }
  });

  it('a generated 20k-key run config, at its first and last keys', () => {
    const { text } = largeConfig('run-config-unknown-keys', 20_000);
    const large = readLargeYaml(text)!;
    const small = new YamlSourceDocument(text, '1.2');
    assert.deepEqual(large.value, small.value);
    for (const p of [['training', 'extra_0'], ['training', 'extra_19999'], ['model', 'd_model'], ['training']]) {
      assert.deepEqual(large.rangeOf(p, 'key'), small.rangeOf(p, 'key'));
      assert.deepEqual(large.rangeOf(p), small.rangeOf(p));
    }
  });

  it('parseSourceDocument takes this reader only above LARGE_YAML_CHARS, for YAML 1.2 and 1.1, and the yaml package for what js-yaml refuses', () => {
    const body = 'model:\n' + Array.from({ length: 6000 }, (_, i) => `  k${i}: ${i}\n`).join('');
    assert.ok(body.length > LARGE_YAML_CHARS);
    assert.equal(parseSourceDocument(body, 'yaml').constructor.name, 'LargeYamlDocument');
    assert.equal(parseSourceDocument(body, 'yaml', { yamlVersion: '1.1' }).constructor.name, 'LargeYamlDocument');
    assert.equal(
      parseSourceDocument(body + 'when: 2001-12-14\n', 'yaml', { yamlVersion: '1.1' }).constructor.name,
      'YamlSourceDocument',
      'a YAML 1.1 timestamp',
    );
    assert.equal(parseSourceDocument(body.slice(0, 1000), 'yaml').constructor.name, 'YamlSourceDocument');
    assert.equal(parseSourceDocument(body + 'null: 1\n', 'yaml').constructor.name, 'YamlSourceDocument', 'a null key');
    assert.equal(
      parseSourceDocument(body + 'z: |\n  text\n', 'yaml').constructor.name,
      'YamlSourceDocument',
      'a block scalar',
    );
    assert.equal(
      parseSourceDocument(body + 'z: &a 1\ny: *a\n', 'yaml').constructor.name,
      'YamlSourceDocument',
      'an alias',
    );
    const broken = parseSourceDocument(body + 'x: [1, 2\n', 'yaml');
    assert.equal(broken.constructor.name, 'YamlSourceDocument');
    assert.ok(broken.syntaxErrors.length > 0);
  });
});
