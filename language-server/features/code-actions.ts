// Quick fixes: each problem carries its fixes (core decides them); this turns the ones for the
// diagnostics in the request into workspace edits.
import { CodeActionKind, type CodeAction, type Diagnostic } from 'vscode-languageserver/node';
import type { ConfigAnalysis } from '../../core/config/config-analysis';
import type { ServerFeature } from './feature';
import { DIAGNOSTIC_SOURCE, textEditFor } from '../lsp-conversions';

/** Quick fixes another feature offers for our diagnostics (LSP allows one code-action handler). */
export type CodeActionSource = (analysis: ConfigAnalysis, diagnostic: Diagnostic, uri: string) => CodeAction[];
const sources: CodeActionSource[] = [];

export function addCodeActionSource(source: CodeActionSource): void {
  sources.push(source);
}

export const codeActions: ServerFeature = {
  capabilities: { codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] } },
  register(server) {
    server.connection.onCodeAction((params) => {
      const analysis = server.analysisOf(params.textDocument.uri);
      if (!analysis) return [];
      const problems = server.publishedProblems(params.textDocument.uri);
      const actions: CodeAction[] = [];
      for (const d of params.context.diagnostics) {
        if (d.source !== DIAGNOSTIC_SOURCE) continue;
        const p = problems.find(
          (q) =>
            q.code === d.code &&
            q.range.start.line === d.range.start.line &&
            q.range.start.character === d.range.start.character &&
            String(d.message).endsWith(q.message),
        );
        for (const fix of p?.fixes ?? []) {
          actions.push({
            title: fix.title,
            kind: CodeActionKind.QuickFix,
            diagnostics: [d],
            isPreferred: fix.preferred,
            edit: { changes: { [params.textDocument.uri]: [textEditFor(analysis, fix)] } },
          });
        }
        for (const source of sources) actions.push(...source(analysis, d, params.textDocument.uri));
      }
      return actions;
    });
  },
};
