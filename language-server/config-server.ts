// The server's state: open documents, their analysis (cached per version and settings), the
// per-folder `fsdp.*` settings and the native runtime. Features (language-server/features/*.ts)
// read analyses from here and register their own handlers; this file owns no LSP feature itself.
//
// Two analyses of a document: the full one, with the native runtime's check (which reads data
// files), runs on a worker thread (background-checks.ts) and gives its diagnostics; the one on
// this thread, for completion, hover and quick fixes, leaves the runtime out (no I/O) and is made
// only for documents up to LARGE_DOCUMENT_CHARS. So no document, however large or whatever it
// names, keeps the server from answering requests about the others.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TextDocuments, type Connection } from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { analyseConfig, type ConfigAnalysis } from '../core/config/config-analysis';
import { recogniseConfig, type ConfigAssociation } from '../core/config/document-kind';
import type { ConfigProblem } from '../core/config/schema-problems';
import { DEFAULT_SETTINGS, type AnalysisEnvironment, type AnalysisSettings } from '../core/rules/rule';
import { BackgroundChecks, LARGE_DOCUMENT_CHARS } from './background-checks';
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
  private readonly analyses = new Map<
    string,
    { version: number; settings: FsdpSettings; analysis: ConfigAnalysis | undefined }
  >();
  private readonly settings = new Map<string, FsdpSettings>();
  private readonly problemSources: ProblemSource[] = [];
  private readonly analysisListeners: Array<(uri: string) => void> = [];
  /** The problems last published per document (the full analysis plus the features' sources). */
  private readonly published = new Map<string, ConfigProblem[]>();
  private checks: BackgroundChecks | undefined;
  /** Whether the client answers workspace/configuration (tests may run without it). */
  supportsConfiguration = false;

  /** workerScript: the file analysis threads run (the bundle), or none to analyse on this thread (tests of core). */
  constructor(
    readonly connection: Connection,
    readonly runtime: RuntimeValidation & { addonPath?: string },
    workerScript?: string,
  ) {
    if (workerScript)
      this.checks = new BackgroundChecks(workerScript, runtime.addonPath ?? '', (m) => connection.console.error(m));
  }

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

  /** Problems of the analysis plus those the features contribute. */
  problemsOf(analysis: ConfigAnalysis): ConfigProblem[] {
    return [...analysis.problems, ...this.problemSources.flatMap((source) => source(analysis))];
  }

  /**
   * The full check of the document's current version (on a worker thread) plus the features'
   * problems; undefined when the document is not a config, is closed, or a newer version replaced
   * this one before it was checked.
   */
  async checkDocument(uri: string): Promise<ConfigProblem[] | undefined> {
    const doc = this.documents.get(uri);
    if (!doc) return undefined;
    const settings = this.settings.get(uri) ?? {};
    const fileName = fileNameOf(uri);
    const text = doc.getText();
    const kind = recogniseConfig(fileName, text, settings.files?.associations ?? {});
    if (!kind) return [];
    let problems: ConfigProblem[] | undefined;
    if (this.checks) {
      const openFiles = this.documents
        .all()
        .filter((d) => d.uri !== uri && d.uri.startsWith('file:') && d.getText().length <= LARGE_DOCUMENT_CHARS)
        .map((d): [string, string] => [fileURLToPath(d.uri), d.getText()]);
      problems = await this.checks.check(uri, {
        kind,
        text,
        fileName,
        settings: analysisSettings(settings),
        openFiles,
      });
    } else {
      problems = analyseConfig(kind, text, fileName, this.environment(settings, true)).problems;
    }
    if (problems === undefined || this.documents.get(uri)?.version !== doc.version) return undefined;
    const analysis = this.analysisOf(uri);
    return [...problems, ...(analysis ? this.problemSources.flatMap((source) => source(analysis)) : [])];
  }

  /** Records what was published for the document (hover and quick fixes read it). */
  setPublished(uri: string, problems: ConfigProblem[]): void {
    this.published.set(uri, problems);
  }

  /** The problems last published for the document. */
  publishedProblems(uri: string): ConfigProblem[] {
    return this.published.get(uri) ?? [];
  }

  stop(): void {
    this.checks?.stop();
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
    this.published.delete(uri);
  }

  /** This thread's analysis: no runtime check, and none at all for documents beyond LARGE_DOCUMENT_CHARS. */
  private analyse(doc: TextDocument, settings: FsdpSettings): ConfigAnalysis | undefined {
    const fileName = fileNameOf(doc.uri);
    const text = doc.getText();
    if (text.length > LARGE_DOCUMENT_CHARS) return undefined;
    const kind = recogniseConfig(fileName, text, settings.files?.associations ?? {});
    if (!kind) return undefined;
    return analyseConfig(kind, text, fileName, this.environment(settings, !this.checks));
  }

  private environment(settings: FsdpSettings, withRuntime: boolean): AnalysisEnvironment {
    return {
      settings: analysisSettings(settings),
      readFile: (file) => this.readFile(file),
      validateRunConfig: withRuntime ? this.runtime.validateConfig : undefined,
    };
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
      return (
        ((await this.connection.workspace.getConfiguration({
          scopeUri: uri,
          section: 'fsdp',
        })) as FsdpSettings | null) ?? {}
      );
    } catch (e) {
      this.connection.console.warn(`could not read the fsdp settings for ${uri}: ${(e as Error).message}`);
      return {};
    }
  }
}

function analysisSettings(settings: FsdpSettings): AnalysisSettings {
  const world = settings.deepspeed?.worldSize;
  return {
    ...DEFAULT_SETTINGS,
    deepspeedWorldSize: typeof world === 'number' && world > 0 ? world : undefined,
    deepspeedLaunchedWith: settings.deepspeed?.launchedWith ?? DEFAULT_SETTINGS.deepspeedLaunchedWith,
  };
}

/** A file path for file: URIs; the URI's path otherwise (untitled documents, remote schemes). */
export function fileNameOf(uri: string): string {
  if (uri.startsWith('file:')) return fileURLToPath(uri);
  return decodeURIComponent(uri.replace(/^[a-z-]+:/i, ''));
}
