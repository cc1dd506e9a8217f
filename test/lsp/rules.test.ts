import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Diagnostic } from 'vscode-languageserver-protocol';
import { fileUri, LanguageServerClient, repoRoot } from './harness/language-server-client';
import { applyTextEdits, parseMarked } from './harness/marked-text';
import { REFERENCED_FILES, RULE_CASES, type RuleCase } from './rule-cases';

const SEVERITY = { error: 1, warning: 2, information: 3, hint: 4 } as const;

describe('language server over stdio: every rule, triggered and not, with its exact range and quick fixes', function () {
  this.timeout(120_000);
  const servers = new Map<string, LanguageServerClient>();
  let dir: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-lsp-rules-'));
    for (const [name, text] of Object.entries(REFERENCED_FILES)) writeFileSync(path.join(dir, name), text);
  });
  after(async () => {
    for (const s of servers.values()) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * One server per distinct settings, shared by the cases that use them. These cases check the
   * schemas and rules, so the runtime's own check (which also wants real data files and a build
   * that runs several ranks) is left out; test/lsp/runtime-validation.test.ts covers it.
   */
  async function serverFor(c: RuleCase): Promise<LanguageServerClient> {
    const key = JSON.stringify(c.settings ?? {});
    let s = servers.get(key);
    if (!s) {
      s = await LanguageServerClient.start({
        settings: c.settings ?? {},
        nativeAddonPath: path.join(repoRoot, 'native', 'build', 'Release', 'absent-for-rule-tests.node'),
      });
      servers.set(key, s);
    }
    return s;
  }

  for (const c of RULE_CASES) {
    it(`${c.code}: ${c.name}`, async () => {
      const server = await serverFor(c);
      const uri = fileUri(path.join(dir, c.file));
      const { text, ranges } = parseMarked(c.marked);
      const diagnostics = await server.open(uri, text);
      const mine = diagnostics.filter((d) => d.code === c.code);
      assert.deepEqual(
        mine.map((d) => d.range).sort(byStart),
        ranges.sort(byStart),
        `ranges of ${c.code}; all diagnostics: ${show(diagnostics)}`,
      );
      for (const d of mine) assert.equal(d.severity, SEVERITY[c.severity], `severity of "${d.message}"`);
      assert.deepEqual(
        diagnostics.filter((d) => d.code !== c.code && d.severity === SEVERITY.error),
        [],
        'the triggering config has no other errors',
      );

      for (const d of mine) {
        const actions = await server.codeActions(uri, d.range, [d]);
        assert.equal(
          actions.length,
          c.fixes ?? 0,
          `quick fixes for "${d.message}": ${actions.map((a) => a.title).join(' | ')}`,
        );
        for (const action of actions) {
          const fixed = applyTextEdits(text, action.edit!.changes![uri]);
          const after = await server.change(uri, fixed);
          const still = after.filter((x) => x.code === c.code);
          assert.ok(
            still.length < mine.length,
            `"${action.title}" did not remove the problem:\n${fixed}\n${show(after)}`,
          );
          assert.deepEqual(
            after.filter((x) => x.severity === SEVERITY.error && x.code !== c.code),
            [],
            `"${action.title}" introduced errors:\n${fixed}`,
          );
          await server.change(uri, text);
        }
      }

      const clean = await server.change(uri, c.clean);
      assert.deepEqual(
        clean.filter((d) => d.code === c.code),
        [],
        `the clean variant still triggers ${c.code}`,
      );
      assert.deepEqual(
        clean.filter((d) => d.severity === SEVERITY.error),
        [],
        `the clean variant has errors: ${show(clean)}`,
      );
      await server.close(uri);
    });
  }
});

function byStart(
  a: { start: { line: number; character: number } },
  b: { start: { line: number; character: number } },
): number {
  return a.start.line - b.start.line || a.start.character - b.start.character;
}

function show(ds: Diagnostic[]): string {
  return ds
    .map(
      (d) =>
        `[${d.severity} ${d.code} ${d.range.start.line}:${d.range.start.character}-${d.range.end.line}:${d.range.end.character}] ${d.message}`,
    )
    .join('\n');
}
