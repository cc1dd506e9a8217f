// The server's state: open documents, their analysis (cached per version and settings), the
// per-folder `fsdp.*` settings and the native runtime. Features (language-server/features/*.ts)
// read analyses from here and register their own handlers; this file owns no LSP feature itself.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TextDocuments, type Connection } from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { analyseConfig, type ConfigAnalysis } from '../core/config/config-analysis';
import { recogniseConfig, type ConfigAssociation } from '../core/config/document-kind';
import type { ConfigProblem } from '../core/config/schema-problems';
import { DEFAULT_SETTINGS, type AnalysisSettings } from '../core/rules/rule';
import type { RuntimeValidation } from './runtime-validation';

/** The `fsdp` settings section, as the client's package.json contributes it. */
export interface FsdpSettings {
  files?: { associations?: Record<string, ConfigAssociation> };
  deepspeed?: { worldSize?: number | null; launchedWith?: AnalysisSettings['deepspeedLaunchedWith'] };
  /** The memory estimate's target for configs that name no GPU (features/memory-hints.ts). */
  estimator?: { gpu?: string | null };
}

/** Extra problems a feature contributes to a document's diagnostics (e.g. the memory estimate). */
export type ProblemSource = (analysis: ConfigAnalysis) => ConfigProblem[];

export class ConfigServer {
  readonly documents = new TextDocuments(TextDocument);
  private readonly analyses = new Map<string, { version: number; settings: FsdpSettings; analysis: ConfigAnalysis | undefined }>();
  private readonly settings = new Map<string, FsdpSettings>();
  private readonly problemSources: ProblemSource[] = [];
  private readonly analysisListeners: Array<(uri: string) => void> = [];
  /** Whether the client answers workspace/configuration (tests may run without it). */
  supportsConfiguration = false;

  constructor(
    readonly connection: Connection,
    readonly runtime: RuntimeValidation,
  ) {}

  /** The analysis of an open document, or undefined when it is not a config we know. */
  analysisOf(uri: string): ConfigAnalysis | undefined {
    const doc = this.documents.get(uri);
    if (!doc) return undefined;
    const settings = this.settings.get(uri) ?? {};
    const cached = this.analyses.get(uri);
    if (cached && cached.version === doc.version && cached.settings === settings) return cached.analysis;
    const analysis = this.analyse(doc, settings);
    this.analyses.set(uri, { version: doc.version, settings, analysis });
    return analysis;
  }

  /** The `fsdp` settings of an open document (empty until first fetched). */
  settingsOf(uri: string): FsdpSettings {
    return this.settings.get(uri) ?? {};
  }

  /** Problems of the analysis plus those the features contribute: what diagnostics show. */
  problemsOf(analysis: ConfigAnalysis): ConfigProblem[] {
    return [...analysis.problems, ...this.problemSources.flatMap((source) => source(analysis))];
  }

  addProblemSource(source: ProblemSource): void {
    this.problemSources.push(source);
  }

  /** Called after a document's analysis may have changed (opened, edited, settings changed). */
  onAnalysisChanged(listener: (uri: string) => void): void {
    this.analysisListeners.push(listener);
  }

  /** Fetches the document's settings (once per document until they change), then notifies listeners. */
  async refresh(uri: string): Promise<void> {
    if (!this.settings.has(uri)) this.settings.set(uri, await this.fetchSettings(uri));
    for (const listener of this.analysisListeners) listener(uri);
  }

  /** Settings changed: forget them all and re-check every open document. */
  async settingsChanged(): Promise<void> {
    this.settings.clear();
    await Promise.all(this.documents.all().map((d) => this.refresh(d.uri)));
  }

  forget(uri: string): void {
    this.analyses.delete(uri);
    this.settings.delete(uri);
  }

  private analyse(doc: TextDocument, settings: FsdpSettings): ConfigAnalysis | undefined {
    const fileName = fileNameOf(doc.uri);
    const text = doc.getText();
    const kind = recogniseConfig(fileName, text, settings.files?.associations ?? {});
    if (!kind) return undefined;
    const world = settings.deepspeed?.worldSize;
    return analyseConfig(kind, text, fileName, {
      settings: {
        ...DEFAULT_SETTINGS,
        deepspeedWorldSize: typeof world === 'number' && world > 0 ? world : undefined,
        deepspeedLaunchedWith: settings.deepspeed?.launchedWith ?? DEFAULT_SETTINGS.deepspeedLaunchedWith,
      },
      readFile: (file) => this.readFile(file),
      validateRunConfig: this.runtime.validateConfig,
    });
  }

  /** A referenced file's text: the editor's copy if it is open, else the disk's. */
  private readFile(file: string): string | undefined {
    const open = this.documents.all().find((d) => d.uri.startsWith('file:') && fileURLToPath(d.uri) === file);
    if (open) return open.getText();
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  }

  private async fetchSettings(uri: string): Promise<FsdpSettings> {
    if (!this.supportsConfiguration) return {};
    try {
      return ((await this.connection.workspace.getConfiguration({ scopeUri: uri, section: 'fsdp' })) as FsdpSettings | null) ?? {};
    } catch (e) {
      this.connection.console.warn(`could not read the fsdp settings for ${uri}: ${(e as Error).message}`);
      return {};
    }
  }
}

/** A file path for file: URIs; the URI's path otherwise (untitled documents, remote schemes). */
export function fileNameOf(uri: string): string {
  if (uri.startsWith('file:')) return fileURLToPath(uri);
  return decodeURIComponent(uri.replace(/^[a-z-]+:/i, ''));
}
