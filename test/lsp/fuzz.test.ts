// 10,000 mutated configs through the real server: random edits, truncation, wrong types, broken
// nesting, YAML alias bombs. The server must answer every change with diagnostics inside the
// document, answer completion, hover and code actions, never crash and never log an analysis
// failure. Deterministic: the same seed gives the same 10,000 texts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Diagnostic } from 'vscode-languageserver-protocol';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';

const MUTANTS = 10_000;
const SEED = 20261121;

const SEEDS: Array<{ uri: string; text: string }> = [
  { uri: 'file:///fuzz/run.fsdp.yaml', text: readFileSync(path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), 'utf8') },
  {
    uri: 'file:///fuzz/ds_config.json',
    text: readFileSync(
      path.join(
        repoRoot,
        'test',
        'fixtures',
        'public-configs',
        'huggingface-transformers',
        'tests',
        'deepspeed',
        'ds_config_zero3.json',
      ),
      'utf8',
    ),
  },
  {
    uri: 'file:///fuzz/accelerate_config.yaml',
    text: readFileSync(
      path.join(
        repoRoot,
        'test',
        'fixtures',
        'public-configs',
        'huggingface-accelerate',
        'tests',
        'test_configs',
        'latest_fsdp.yaml',
      ),
      'utf8',
    ),
  },
  {
    uri: 'file:///fuzz/zf_config.json',
    text: readFileSync(
      path.join(
        repoRoot,
        'test',
        'fixtures',
        'public-configs',
        'deepspeedai-DeepSpeedExamples',
        'training',
        'DeepSpeed-ZenFlow',
        'finetuning',
        'zf_config.json',
      ),
      'utf8',
    ),
  },
];

/** mulberry32: a small, well-distributed 32-bit PRNG, so runs are reproducible. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const JUNK = [
  '',
  ' ',
  '\n',
  '\t',
  ':',
  ',',
  '{',
  '}',
  '[',
  ']',
  '"',
  "'",
  '#',
  '-',
  '*a',
  '&a',
  '!!binary',
  'auto',
  '"auto"',
  'null',
  'true',
  'NO',
  '1e309',
  '-0',
  '0x1F',
  '∞',
  '😀',
  '\u0000',
  '\r\n',
  'a'.repeat(300),
];
const WRONG = ['"x"', '[]', '{}', 'null', 'true', '-1', '0', '1.5', '"auto"', '1e400', '[1, [2, [3]]]'];

function mutate(text: string, rnd: () => number): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const at = () => Math.floor(rnd() * (text.length + 1));
  let out = text;
  const edits = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < edits; i++) {
    const p = Math.min(at(), out.length);
    switch (Math.floor(rnd() * 9)) {
      case 0:
        out = out.slice(0, p) + pick(JUNK) + out.slice(p);
        break; // insert junk
      case 1:
        out = out.slice(0, p) + out.slice(p + 1 + Math.floor(rnd() * 20));
        break; // delete a run
      case 2:
        out = out.slice(0, p);
        break; // truncate
      case 3:
        out = out.replace(/(:\s*)(-?\d[\d.e+-]*|true|false|"[^"\n]*"|[A-Z_]{3,})/g, (m, pre: string) =>
          rnd() < 0.15 ? pre + pick(WRONG) : m,
        );
        break; // wrong types
      case 4: {
        const lines = out.split('\n');
        const a = Math.floor(rnd() * lines.length);
        const b = Math.floor(rnd() * lines.length);
        [lines[a], lines[b]] = [lines[b], lines[a]];
        out = lines.join('\n');
        break;
      } // swap lines
      case 5: {
        const lines = out.split('\n');
        const a = Math.floor(rnd() * lines.length);
        lines.splice(a, 0, lines[a] ?? '');
        out = lines.join('\n');
        break;
      } // duplicate a line (duplicate keys)
      case 6:
        out = out.replace(/\n( *)/g, (m, sp: string) =>
          rnd() < 0.1 ? `\n${sp.slice(0, Math.max(0, sp.length - 2 + Math.floor(rnd() * 5)))}` : m,
        );
        break; // break indentation
      case 7:
        out = `a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c]\n${out}`;
        break; // alias expansion
      default:
        out = out.slice(0, p) + '{'.repeat(1 + Math.floor(rnd() * 50)) + out.slice(p);
        break; // deep nesting
    }
  }
  return out;
}

describe('language server over stdio: fuzz', function () {
  this.timeout(240_000);
  let server: LanguageServerClient;

  before(async () => {
    server = await LanguageServerClient.start();
    for (const s of SEEDS) await server.open(s.uri, s.text);
  });
  after(async () => {
    await server?.stop();
  });

  it(`answers ${MUTANTS.toLocaleString('en')} mutated configs without crashing, hanging or failing an analysis`, async () => {
    const rnd = random(SEED);
    const started = Date.now();
    let slowest = 0;
    for (let i = 0; i < MUTANTS; i++) {
      const seed = SEEDS[i % SEEDS.length];
      const text = mutate(seed.text, rnd);
      const t0 = Date.now();
      const diagnostics = await server.change(seed.uri, text);
      slowest = Math.max(slowest, Date.now() - t0);
      assertInside(diagnostics, text, `mutant ${i} of ${seed.uri}`);
      if (i % 10 === 0) {
        const line = Math.floor(rnd() * (text.split('\n').length + 1));
        const position = { line, character: Math.floor(rnd() * 40) };
        await server.completion(seed.uri, position);
        await server.hover(seed.uri, position);
        if (diagnostics.length) await server.codeActions(seed.uri, diagnostics[0].range, [diagnostics[0]]);
      }
      assert.ok(server.alive, `the server died at mutant ${i}: ${server.exitReason}\n${text}`);
    }
    const failures = server.logs.filter((l) => l.type === 1);
    assert.deepEqual(failures, [], 'errors logged by the server');
    console.log(
      `      ${MUTANTS} mutants in ${((Date.now() - started) / 1000).toFixed(1)} s; slowest answer ${slowest} ms`,
    );
  });
});

function assertInside(diagnostics: Diagnostic[], text: string, what: string): void {
  const lines = text.split('\n');
  for (const d of diagnostics) {
    for (const p of [d.range.start, d.range.end]) {
      assert.ok(
        p.line >= 0 && p.line < lines.length && p.character >= 0 && p.character <= lines[p.line].length,
        `${what}: diagnostic "${d.message}" at ${p.line}:${p.character} is outside the text`,
      );
    }
  }
}
