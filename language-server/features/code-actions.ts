// Quick fixes: each problem carries its fixes (core decides them); this turns the ones for the
// diagnostics in the request into workspace edits.
import { CodeActionKind, type CodeAction } from 'vscode-languageserver/node';
import type { ServerFeature } from './feature';
import { DIAGNOSTIC_SOURCE, textEditFor } from '../lsp-conversions';

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
        const p = problems.find((q) => q.code === d.code && q.range.start.line === d.range.start.line && q.range.start.character === d.range.start.character && String(d.message).endsWith(q.message));
        for (const fix of p?.fixes ?? []) {
          actions.push({
            title: fix.title,
            kind: CodeActionKind.QuickFix,
            diagnostics: [d],
            isPreferred: fix.preferred,
            edit: { changes: { [params.textDocument.uri]: [textEditFor(analysis, fix)] } },
          });
        }
      }
      return actions;
    });
  },
};
