import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

// ESLint runs as part of `npm test` through this file: the project's own config over every
// source file, so a branch that breaks a rule fails its tests, not a later review.
describe('lint (eslint.config.mjs)', () => {
  it('the repository has no ESLint errors', async function () {
    this.timeout(120_000);
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: root });
    const results = await eslint.lintFiles(['.']);
    const errors = results.flatMap((r) =>
      r.messages
        .filter((m) => m.severity === 2)
        .map((m) => `${path.relative(root, r.filePath)}:${m.line}:${m.column} ${m.message} (${m.ruleId})`),
    );
    assert.ok(results.length > 150, `linted only ${results.length} files: is the ignore list too wide?`);
    assert.deepEqual(errors, []);
  });

  it('the config applies typescript-eslint rules to TypeScript files', async () => {
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: root });
    const [result] = await eslint.lintText('export const x: any = 1;\n', {
      filePath: path.join(root, 'core/lint-probe.ts'),
    });
    assert.deepEqual(
      result.messages.map((m) => m.ruleId),
      ['@typescript-eslint/no-explicit-any'],
    );
  });

  // The one formatting of the code base (issue 25): Prettier for TypeScript, JavaScript modules and
  // CSS (.prettierrc.json), clang-format for the native runtime (.clang-format). `npm run format`
  // fixes what these name.
  it('every source file is formatted (npm run format:check)', function () {
    this.timeout(600_000);
    const prettier = spawnSync(
      process.execPath,
      [
        path.join(root, 'node_modules', 'prettier', 'bin', 'prettier.cjs'),
        '--check',
        '--log-level',
        'warn',
        '**/*.{ts,mjs,css}',
      ],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(prettier.status, 0, `Prettier: not formatted (npm run format):\n${prettier.stdout}${prettier.stderr}`);
    const native = spawnSync(process.execPath, [path.join(root, 'scripts', 'format-native.mjs'), '--check'], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(native.status, 0, `clang-format: ${native.stdout}${native.stderr}`);
  });

  // The project's Python (issue 38) to the same standard: ruff's lint and format check (ruff.toml)
  // and mypy (mypy.ini), with the versions pinned in the .venv. `node scripts/lint-python.mjs --fix`
  // fixes what ruff can.
  it('the Python passes ruff and mypy (npm run lint:python)', function () {
    this.timeout(600_000);
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'lint-python.mjs')], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    assert.equal(r.status, 0, `scripts/lint-python.mjs:\n${r.stdout}${r.stderr}`);
    // Each mypy run prints its count: a folder checked with no file in it would say 0.
    const checked = [...r.stdout.matchAll(/no issues found in (\d+) source files?/g)].map((m) => Number(m[1]));
    assert.ok(
      checked.reduce((a, b) => a + b, 0) >= 50,
      `mypy checked only ${checked.join(' + ')} files: is ruff.toml's include too narrow?`,
    );
  });
});
