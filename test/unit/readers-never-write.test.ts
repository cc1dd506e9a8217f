import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// Issue 41 item 2, "readers never write": a run's state (run.json, metrics.jsonl) is written by its
// owner — the supervisor, in a SLURM job's batch step too (python/fsdp_studio/slurm_job_end.py) —
// and by the commands that act on a run before or instead of one (launch, Stop: runs/slurm/), never
// by what watches it. This reads the watch (runs/watch/) and the extension for calls that write files.
const root = path.resolve(__dirname, '../..');

/** Calls that write or remove files, by the name called (a function, or a method of any object). */
const FILE_WRITERS = new Set([
  'writeFile',
  'writeFileSync',
  'appendFile',
  'appendFileSync',
  'createWriteStream',
  'rename',
  'renameSync',
  'unlink',
  'unlinkSync',
  'rm',
  'rmSync',
  'mkdir',
  'mkdirSync',
  'truncate',
  'truncateSync',
  'copyFile',
  'copyFileSync',
  'openRegularFileForWriting',
  'writeRegularFileSync',
  'removeRunDir',
]);
/** The writers of a run's own state: run.json through the companion's writer, a SLURM job's end. */
const RUN_STATE_WRITERS = new Set(['writeManifestOn', 'writeHostFile', 'recordJobEnd', 'manifestWriterPath']);

/**
 * The watch's one write: the editor's own list of the runs it watches (run-registry.ts), kept in
 * the editor's storage folder, not in a run folder.
 */
const WATCH_OWN_FILES = new Set(['run-registry.ts']);

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'test' || e.name === 'node_modules' ? [] : tsFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

interface WriteCall {
  /** "runs/watch/x.ts:12 writeFileSync(tmp, …)" */
  where: string;
  name: string;
  args: string;
}

/** Every call in a file whose callee is named in `names` (comments and strings are not calls). */
function callsOf(file: string, names: Set<string>): WriteCall[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: WriteCall[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee)
          ? callee.name.text
          : undefined;
      if (name && names.has(name)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const args = node.arguments.map((a) => a.getText(source)).join(', ');
        found.push({ where: `${path.relative(root, file)}:${line} ${name}(${args})`, name, args });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Imports of the run-state writers (an import alone puts the writer within the reader's reach). */
function writerImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const names: string[] = [];
  for (const s of source.statements)
    if (ts.isImportDeclaration(s) && s.importClause?.namedBindings && ts.isNamedImports(s.importClause.namedBindings))
      for (const e of s.importClause.namedBindings.elements)
        if (RUN_STATE_WRITERS.has((e.propertyName ?? e.name).text))
          names.push(`${path.relative(root, file)} imports ${e.name.text}`);
  return names;
}

describe('readers never write a run (issue 41 item 2)', () => {
  const watchFiles = tsFiles(path.join(root, 'runs', 'watch'));
  const extensionFiles = tsFiles(path.join(root, 'extension'));

  it('finds the files it reads, and the calls it looks for where they are (the check can fail)', () => {
    assert.ok(watchFiles.length > 10, `runs/watch/ has ${watchFiles.length} files`);
    assert.ok(extensionFiles.length > 20, `extension/ has ${extensionFiles.length} files`);
    // The writers it names are real: the SLURM submission writes run.json through them, and the
    // watch's registry writes its own list.
    const submission = callsOf(path.join(root, 'runs', 'slurm', 'slurm-launch.ts'), RUN_STATE_WRITERS);
    assert.ok(
      submission.some((c) => c.name === 'writeManifestOn'),
      submission.map((c) => c.where).join('\n'),
    );
    const registry = callsOf(path.join(root, 'runs', 'watch', 'run-registry.ts'), FILE_WRITERS);
    assert.ok(
      registry.some((c) => c.name === 'writeFileSync'),
      registry.map((c) => c.where).join('\n'),
    );
  });

  it('the watch (runs/watch/) has no file-writing call and no writer of a run, but for its own list of runs', () => {
    const writes = watchFiles
      .filter((f) => !WATCH_OWN_FILES.has(path.basename(f)))
      .flatMap((f) => callsOf(f, new Set([...FILE_WRITERS, ...RUN_STATE_WRITERS])).map((c) => c.where));
    const imports = watchFiles.flatMap(writerImports);
    assert.deepEqual([...writes, ...imports], []);
  });

  it("the extension writes no run's state: no writer of run.json or a job's end, no file write into a run folder", () => {
    const runState = extensionFiles.flatMap((f) => [
      ...callsOf(f, RUN_STATE_WRITERS).map((c) => c.where),
      ...writerImports(f),
    ]);
    // Deleting a run is the person's command on the whole folder (delete-run.ts), not a write of its state.
    const intoRunFolder = extensionFiles
      .flatMap((f) => callsOf(f, FILE_WRITERS))
      .filter((c) => c.name !== 'removeRunDir' && /runDir|run\.json|metrics\.jsonl/.test(c.args))
      .map((c) => c.where);
    assert.deepEqual([...runState, ...intoRunFolder], []);
  });
});
