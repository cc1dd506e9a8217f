// The memory estimate inline on every recognised config: a CodeLens on the section that decides
// most of the memory ("≈ 23.4 GiB / GPU (params 3.1 · …) — fits H100 80GB") that opens the
// memory estimator panel, and a warning, with quick fixes, when the config does not fit its
// target (launch.gpu, the config's "fsdp-studio: gpu=…" comment, or the fsdp.estimator.gpu setting).
import os from 'node:os';
import type { CodeLens } from 'vscode-languageserver/node';
import type { ConfigAnalysis } from '../../core/config/config-analysis';
import { configMemory, type ConfigMemory } from '../../core/memory/config-memory';
import { fileNameOf, type ConfigServer } from '../config-server';
import type { ServerFeature } from './feature';

/** The command the lens runs (contributed by the extension): opens the panel on the document. */
export const OPEN_ESTIMATOR_COMMAND = 'fsdp.openMemoryEstimator';

export const memoryHints: ServerFeature = {
  capabilities: { codeLensProvider: { resolveProvider: false } },
  register(server) {
    // An analysis is made once per document version and settings; so is its estimate.
    const estimates = new WeakMap<ConfigAnalysis, ConfigMemory | undefined>();
    const memoryOf = (analysis: ConfigAnalysis, uri: string): ConfigMemory | undefined => {
      if (estimates.has(analysis)) return estimates.get(analysis);
      // A config with errors gets its diagnostics, not a guess.
      const m = analysis.problems.some((p) => p.severity === 'error') ? undefined : configMemory(analysis.kind, analysis.doc.text, analysis.fileName, { gpu: server.settingsOf(uri).estimator?.gpu ?? undefined, hostMemoryBytes: os.totalmem() });
      const result = m && !('error' in m) ? m : undefined;
      estimates.set(analysis, result);
      return result;
    };
    server.addProblemSource((analysis) => {
      const uri = uriOf(server, analysis);
      const problem = uri ? memoryOf(analysis, uri)?.problem : undefined;
      return problem ? [problem] : [];
    });
    server.connection.onCodeLens(({ textDocument }): CodeLens[] => {
      const analysis = server.analysisOf(textDocument.uri);
      const m = analysis && memoryOf(analysis, textDocument.uri);
      if (!m) return [];
      return [{ range: m.read.anchor, command: { title: m.title, command: OPEN_ESTIMATOR_COMMAND, arguments: [textDocument.uri] } }];
    });
  },
};

function uriOf(server: ConfigServer, analysis: ConfigAnalysis): string | undefined {
  return server.documents.all().find((d) => fileNameOf(d.uri) === analysis.fileName)?.uri;
}
