// Publishes every problem of a config as a diagnostic whenever its analysis may have changed. Files
// that are not configs get an empty list, so stale diagnostics disappear when a file stops being one.
import type { Diagnostic } from 'vscode-languageserver/node';
import type { ServerFeature } from './feature';
import { toDiagnostic } from '../lsp-conversions';

export const diagnostics: ServerFeature = {
  capabilities: {},
  register(server) {
    server.onAnalysisChanged((uri) => {
      const doc = server.documents.get(uri);
      if (!doc) return;
      let list: Diagnostic[];
      try {
        const analysis = server.analysisOf(uri);
        list = analysis ? server.problemsOf(analysis).map(toDiagnostic) : [];
      } catch (e) {
        // A bug in a rule must not take the server down; it says where in the log.
        server.connection.console.error(`analysis of ${uri} failed: ${(e as Error).stack ?? e}`);
        list = [];
      }
      void server.connection.sendDiagnostics({ uri, version: doc.version, diagnostics: list });
    });
  },
};
