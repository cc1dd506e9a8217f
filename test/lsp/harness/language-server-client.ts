// Drives the real language server (dist/language-server.js) over stdio with a JSON-RPC protocol
// client, as an editor would: initialize, open and edit documents, ask for completion, hover and
// code actions, and collect the diagnostics it publishes. Answers workspace/configuration with the
// settings the test gives.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import type {
  CodeAction,
  CodeLens,
  CompletionItem,
  CompletionList,
  Diagnostic,
  Hover,
  InitializeResult,
  Position,
  PublishDiagnosticsParams,
  Range,
} from 'vscode-languageserver-protocol';

export const repoRoot = path.resolve(__dirname, '../../..');
const SERVER = path.join(repoRoot, 'dist', 'language-server.js');
/**
 * How long a test waits for the server's diagnostics: a bound for a server that never answers, not a
 * speed check. The first check of a run config runs the native runtime's validation and the memory
 * plan, which took over 10 s on this shared 2-core machine under load (memory-hints failed so).
 */
const DIAGNOSTICS_WAIT_MS = 40_000;

export interface ServerSession {
  settings?: Record<string, unknown>;
  /** initializationOptions.nativeAddonPath; default: the server's own default. */
  nativeAddonPath?: string;
}

export class LanguageServerClient {
  readonly logs: Array<{ type: number; message: string }> = [];
  private readonly published = new Map<string, PublishDiagnosticsParams>();
  private readonly waiters: Array<{ uri: string; version: number; resolve: (d: Diagnostic[]) => void }> = [];
  private readonly versions = new Map<string, number>();
  private exited: string | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly connection: MessageConnection,
    private settings: Record<string, unknown>,
  ) {}

  static async start(session: ServerSession = {}): Promise<LanguageServerClient> {
    ensureServerBuilt();
    const child = spawn(process.execPath, [SERVER, '--stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    const client = new LanguageServerClient(child, connection, session.settings ?? {});
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += String(d)));
    child.on(
      'exit',
      (code, signal) => (client.exited = `server exited (code ${code}, signal ${signal}): ${stderr.slice(-2000)}`),
    );
    connection.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => client.onPublish(p));
    connection.onNotification('window/logMessage', (p: { type: number; message: string }) => void client.logs.push(p));
    connection.onRequest('workspace/configuration', (p: { items: Array<{ section?: string }> }) =>
      p.items.map((i) => (i.section === 'fsdp' ? client.settings : null)),
    );
    connection.onRequest('client/registerCapability', () => null);
    connection.listen();
    await connection.sendRequest<InitializeResult>('initialize', {
      processId: process.pid,
      rootUri: null,
      capabilities: {
        workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
        textDocument: { publishDiagnostics: { versionSupport: true } },
      },
      initializationOptions: session.nativeAddonPath ? { nativeAddonPath: session.nativeAddonPath } : {},
    });
    await connection.sendNotification('initialized', {});
    return client;
  }

  /** Whether the server process is still running. */
  get alive(): boolean {
    return this.exited === undefined && this.child.exitCode === null;
  }

  get exitReason(): string | undefined {
    return this.exited;
  }

  /** Opens a document and returns the diagnostics the server publishes for it (within timeoutMs). */
  async open(
    uri: string,
    text: string,
    languageId = uri.endsWith('.json') ? 'json' : uri.endsWith('.toml') ? 'toml' : 'yaml',
    timeoutMs = DIAGNOSTICS_WAIT_MS,
  ): Promise<Diagnostic[]> {
    this.versions.set(uri, 1);
    const done = this.nextDiagnostics(uri, 1, timeoutMs);
    await this.connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId, version: 1, text },
    });
    return done;
  }

  /** Replaces a document's whole text and returns the diagnostics for the new version. */
  async change(uri: string, text: string): Promise<Diagnostic[]> {
    const version = (this.versions.get(uri) ?? 0) + 1;
    this.versions.set(uri, version);
    const done = this.nextDiagnostics(uri, version);
    await this.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version },
      contentChanges: [{ text }],
    });
    return done;
  }

  async close(uri: string): Promise<void> {
    await this.connection.sendNotification('textDocument/didClose', { textDocument: { uri } });
  }

  /** New settings: the server re-reads them and re-checks open documents. */
  async setSettings(
    settings: Record<string, unknown>,
    reopen: Array<{ uri: string; text: string }>,
  ): Promise<Diagnostic[][]> {
    this.settings = settings;
    await this.connection.sendNotification('workspace/didChangeConfiguration', { settings: null });
    return Promise.all(reopen.map((d) => this.change(d.uri, d.text)));
  }

  async completion(uri: string, position: Position): Promise<CompletionItem[]> {
    const r = await this.connection.sendRequest<CompletionList | CompletionItem[] | null>('textDocument/completion', {
      textDocument: { uri },
      position,
    });
    return Array.isArray(r) ? r : (r?.items ?? []);
  }

  async hover(uri: string, position: Position): Promise<Hover | null> {
    return this.connection.sendRequest<Hover | null>('textDocument/hover', { textDocument: { uri }, position });
  }

  async codeLenses(uri: string): Promise<CodeLens[]> {
    return (
      (await this.connection.sendRequest<CodeLens[] | null>('textDocument/codeLens', { textDocument: { uri } })) ?? []
    );
  }

  async codeActions(uri: string, range: Range, diagnostics: Diagnostic[]): Promise<CodeAction[]> {
    return (
      (await this.connection.sendRequest<CodeAction[] | null>('textDocument/codeAction', {
        textDocument: { uri },
        range,
        context: { diagnostics },
      })) ?? []
    );
  }

  async stop(): Promise<void> {
    if (this.alive) {
      await this.connection.sendRequest('shutdown').catch(() => undefined);
      await this.connection.sendNotification('exit').catch(() => undefined);
    }
    this.connection.dispose();
    if (this.child.exitCode === null) this.child.kill();
  }

  private nextDiagnostics(uri: string, version: number, timeoutMs = DIAGNOSTICS_WAIT_MS): Promise<Diagnostic[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no diagnostics for ${uri} version ${version} within ${timeoutMs / 1000} s${this.exited ? `; ${this.exited}` : ''}`,
            ),
          ),
        timeoutMs,
      );
      this.waiters.push({ uri, version, resolve: (d) => (clearTimeout(timer), resolve(d)) });
    });
  }

  private onPublish(p: PublishDiagnosticsParams): void {
    this.published.set(p.uri, p);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i];
      if (w.uri === p.uri && (p.version === undefined || p.version >= w.version)) {
        this.waiters.splice(i, 1);
        w.resolve(p.diagnostics);
      }
    }
  }
}

/** A file: URI for a (possibly non-existent) path, as editors send them. */
export function fileUri(file: string): string {
  return pathToFileURL(file).href;
}

let built = false;

/** Bundles the server once per test process when any source is newer than the bundle. */
export function ensureServerBuilt(): void {
  if (built) return;
  const bundleTime = statSync(SERVER, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const newest = Math.max(...['core', 'language-server'].flatMap((dir) => sourceTimes(path.join(repoRoot, dir))));
  if (newest > bundleTime) {
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'build.mjs')], {
      cwd: repoRoot,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error('bundling the language server failed');
  }
  built = true;
}

function sourceTimes(dir: string): number[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceTimes(p) : /\.(ts|json)$/.test(e.name) ? [statSync(p).mtimeMs] : [];
  });
}
