// Entry of the language server (bundled to dist/language-server.js, started by the extension or
// any LSP client over stdio): wires document events to the analysis and registers the features.
import { isMainThread, workerData } from 'node:worker_threads';
import {
  createConnection,
  DidChangeConfigurationNotification,
  ProposedFeatures,
  TextDocumentSyncKind,
  type InitializeResult,
} from 'vscode-languageserver/node';
import { isAnalysisWorker, runAnalysisWorker } from './analysis-worker';
import { ConfigServer } from './config-server';
import { FEATURES } from './features';
import { defaultAddonPath, loadRuntimeValidation } from './runtime-validation';

/** What the client may pass in initializationOptions. */
export interface ServerOptions {
  /** Path of fsdp_native.node; defaults to native/build/Release next to dist/. */
  nativeAddonPath?: string;
}

// This bundle is also the body of the analysis threads (analysis-worker.ts).
if (!isMainThread && isAnalysisWorker(workerData)) runAnalysisWorker();
else startServer();

function startServer(): void {
  const connection = createConnection(ProposedFeatures.all);
  let server: ConfigServer | undefined;

  connection.onInitialize((params): InitializeResult => {
    const options = (params.initializationOptions ?? {}) as ServerOptions;
    const runtime = loadRuntimeValidation(options.nativeAddonPath ?? defaultAddonPath());
    server = new ConfigServer(connection, runtime, __filename);
    server.supportsConfiguration = !!params.capabilities.workspace?.configuration;
    const capabilities = Object.assign(
      { textDocumentSync: TextDocumentSyncKind.Incremental },
      ...FEATURES.map((f) => f.capabilities),
    );
    for (const feature of FEATURES) feature.register(server);
    return { capabilities, serverInfo: { name: 'FSDP Studio config server' } };
  });

  connection.onInitialized(() => {
    if (!server) return;
    connection.console.info(server.runtime.status);
    if (server.supportsConfiguration)
      void connection.client.register(DidChangeConfigurationNotification.type, { section: 'fsdp' });
    const s = server;
    s.documents.onDidOpen((e) => void s.refresh(e.document.uri));
    s.documents.onDidChangeContent((e) => {
      void s.refresh(e.document.uri);
      // An accelerate config reads the DeepSpeed file it names: re-check the open ones.
      for (const other of s.documents.all())
        if (other.uri !== e.document.uri && s.analysisOf(other.uri)?.kind === 'accelerate') void s.refresh(other.uri);
    });
    s.documents.onDidClose((e) => {
      s.forget(e.document.uri);
      void connection.sendDiagnostics({ uri: e.document.uri, diagnostics: [] });
    });
    s.documents.listen(connection);
  });

  connection.onDidChangeConfiguration(() => void server?.settingsChanged());
  connection.onShutdown(() => server?.stop());

  connection.listen();
}
