// Publishes every problem of a config as a diagnostic whenever its analysis may have changed. Files
// that are not configs get an empty list, so stale diagnostics disappear when a file stops being one.
import type { Diagnostic } from 'vscode-languageserver/node';
import type { ConfigProblem } from '../../core/config/schema-problems';
import { shownProblems } from '../../core/config/shown-problems';
import type { ServerFeature } from './feature';
import { toDiagnostic } from '../lsp-conversions';

export const diagnostics: ServerFeature = {
  capabilities: {},
  register(server) {
    server.onAnalysisChanged((uri) => {
      void (async () => {
        const version = server.documents.get(uri)?.version;
        let problems: ConfigProblem[] | undefined;
        try {
          problems = await server.checkDocument(uri);
        } catch (e) {
          // A bug in a rule must not take the server down; it says where in the log.
          server.connection.console.error(`analysis of ${uri} failed: ${(e as Error).stack ?? e}`);
          problems = [];
        }
        // Not a config any more, closed, or superseded by a newer version (which publishes its own).
        if (problems === undefined || version === undefined || server.documents.get(uri)?.version !== version) return;
        server.setPublished(uri, problems);
        const list: Diagnostic[] = shownProblems(problems).map(toDiagnostic);
        void server.connection.sendDiagnostics({ uri, version, diagnostics: list });
      })();
    });
  },
};
