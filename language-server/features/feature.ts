// A language-server feature: the capabilities it announces and the handlers it registers. Each
// feature is one file in this folder, listed in ./index.ts; the estimator's inline memory display
// is added the same way (its own file, registering inlay hints or CodeLens and a problem source).
import type { ServerCapabilities } from 'vscode-languageserver/node';
import type { ConfigServer } from '../config-server';

export interface ServerFeature {
  /** Merged into the InitializeResult's capabilities. */
  capabilities: ServerCapabilities;
  /** Registers handlers on server.connection and, if it has problems to add, a problem source. */
  register(server: ConfigServer): void;
}
