import assert from 'node:assert/strict';
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
    const errors = results.flatMap((r) => r.messages.filter((m) => m.severity === 2).map((m) => `${path.relative(root, r.filePath)}:${m.line}:${m.column} ${m.message} (${m.ruleId})`));
    assert.ok(results.length > 150, `linted only ${results.length} files: is the ignore list too wide?`);
    assert.deepEqual(errors, []);
  });

  it('the config applies typescript-eslint rules to TypeScript files', async () => {
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: root });
    const [result] = await eslint.lintText('export const x: any = 1;\n', { filePath: path.join(root, 'core/lint-probe.ts') });
    assert.deepEqual(result.messages.map((m) => m.ruleId), ['@typescript-eslint/no-explicit-any']);
  });
});
