import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// Issue 41 item 4: the watch is kept in small parts, each a job of its own (run-watch.ts composes
// following the stream, liveness, SLURM and the status across a resume), so no file under
// runs/watch/ grows past MAX_LINES and no class there past MAX_METHODS methods (accessors counted,
// the constructor not).
const MAX_LINES = 300;
const MAX_METHODS = 15;
const watchDir = path.resolve(__dirname, '../../runs/watch');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Each class in a source text with how many methods and accessors it declares. */
function classMethodCounts(fileName: string, text: string): { name: string; methods: number }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const counts: { name: string; methods: number }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const methods = node.members.filter(
        (m) => ts.isMethodDeclaration(m) || ts.isGetAccessorDeclaration(m) || ts.isSetAccessorDeclaration(m),
      ).length;
      counts.push({ name: `${path.basename(fileName)} ${node.name?.text ?? '(anonymous)'}`, methods });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return counts;
}

describe('the watch in small parts (runs/watch/)', () => {
  const files = tsFiles(watchDir);

  it('reads the real files (run-watch.ts among them)', () => {
    assert.ok(files.some((f) => f.endsWith(`${path.sep}run-watch.ts`)));
  });

  it(`no file is over ${MAX_LINES} lines`, () => {
    const over = files
      .map((f) => ({ file: path.relative(watchDir, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_LINES);
    assert.deepEqual(over, []);
  });

  it(`no class has more than ${MAX_METHODS} methods`, () => {
    const over = files
      .flatMap((f) => classMethodCounts(f, readFileSync(f, 'utf8')))
      .filter((c) => c.methods > MAX_METHODS);
    assert.deepEqual(over, []);
  });

  it('the method count counts methods and accessors, not the constructor or fields', () => {
    const text = 'class A { x = 1; constructor() {} get a() { return 1; } set a(v) {} b() {} private c() {} }';
    assert.deepEqual(classMethodCounts('a.ts', text), [{ name: 'a.ts A', methods: 4 }]);
  });
});
