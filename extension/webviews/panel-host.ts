// Hosts a webview panel the way VS Code's samples recommend: a strict CSP (`default-src 'none'`,
// scripts only by a per-load nonce), local resources limited to the built webview assets, no
// retained context while hidden (the webview keeps its own state with getState/setState), and
// messages queued while the webview cannot receive them, then replayed in order once it says ready.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { PanelMessage } from '../../core/panels/panel-protocol';

export interface PanelSpec {
  /** Webview type id, e.g. `fsdp.dashboard`. */
  viewType: string;
  title: string;
  /** Bundle name: dist/webview/<bundle>.js (built from webview/<bundle>/main.ts). */
  bundle: string;
  /** Extra stylesheets under dist/webview/assets/ (e.g. uPlot.min.css). */
  styles?: string[];
  iconPath?: vscode.Uri | { light: vscode.Uri; dark: vscode.Uri };
}

export class PanelHost<ToWebview extends PanelMessage, FromWebview extends PanelMessage> implements vscode.Disposable {
  private readonly queue: ToWebview[] = [];
  private ready = false;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly messageEmitter = new vscode.EventEmitter<FromWebview>();
  private readonly readyEmitter = new vscode.EventEmitter<void>();
  private readonly disposeEmitter = new vscode.EventEmitter<void>();
  /** Messages from the webview other than `ready`. */
  readonly onMessage = this.messageEmitter.event;
  /** The webview (re)loaded: send it the full state; queued messages follow. */
  readonly onReady = this.readyEmitter.event;
  readonly onDidDispose = this.disposeEmitter.event;

  static create<T extends PanelMessage, F extends PanelMessage>(
    extensionUri: vscode.Uri,
    spec: PanelSpec,
    column = vscode.ViewColumn.Active,
  ): PanelHost<T, F> {
    const panel = vscode.window.createWebviewPanel(spec.viewType, spec.title, column, PanelHost.options(extensionUri));
    return new PanelHost<T, F>(panel, extensionUri, spec);
  }

  /** Webview options: scripts on, resources only from dist/webview. */
  static options(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')],
    };
  }

  /** Adopts an existing panel (e.g. one restored by a WebviewPanelSerializer after a reload). */
  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly spec: PanelSpec,
  ) {
    panel.webview.options = PanelHost.options(extensionUri);
    if (spec.iconPath) panel.iconPath = spec.iconPath;
    this.disposables.push(
      panel.webview.onDidReceiveMessage((m: FromWebview) => this.receive(m)),
      panel.onDidChangeViewState(() => {
        // A hidden panel without retained context is torn down; it says ready again when shown.
        if (!panel.visible) this.ready = false;
      }),
      panel.onDidDispose(() => this.dispose()),
      this.messageEmitter,
      this.readyEmitter,
    );
    panel.webview.html = this.html();
  }

  /** Sends now if the webview can receive, otherwise queues for replay on its next ready. */
  post(message: ToWebview): void {
    void this.postSettled(message);
  }

  /**
   * As post, and settles once the webview took the message (or it was queued for the next ready):
   * a sender of a stream can hold what comes next until then, and merge it (run-output-tail.ts).
   */
  postSettled(message: ToWebview): Promise<void> {
    if (!this.ready || !this.panel.visible) {
      this.queue.push(message);
      return Promise.resolve();
    }
    return Promise.resolve(this.panel.webview.postMessage(message)).then((delivered) => {
      if (!delivered) this.queue.push(message);
    });
  }

  /** Drops queued messages, e.g. when a full snapshot will be sent on ready instead. */
  clearQueue(): void {
    this.queue.length = 0;
  }

  reveal(): void {
    this.panel.reveal();
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    this.disposeEmitter.fire();
    this.disposeEmitter.dispose();
  }

  private receive(message: FromWebview): void {
    if (message.type === 'ready') {
      this.ready = true;
      this.readyEmitter.fire();
      for (const m of this.queue.splice(0)) void this.panel.webview.postMessage(m);
      return;
    }
    this.messageEmitter.fire(message);
  }

  private html(): string {
    const webview = this.panel.webview;
    const nonce = randomBytes(16).toString('base64');
    const asset = (...p: string[]) =>
      webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview', ...p)).toString();
    const csp = [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
    ].join('; ');
    const styles = ['codicon.css', ...(this.spec.styles ?? [])].map(
      (s) =>
        `<link rel="stylesheet" href="${asset('assets', s)}" id="${s === 'codicon.css' ? 'vscode-codicon-stylesheet' : s}">`,
    );
    const ownCss = `<link rel="stylesheet" href="${asset(`${this.spec.bundle}.css`)}">`;
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${styles.join('\n')}
${ownCss}
<title>${escapeHtml(this.spec.title)}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${asset(`${this.spec.bundle}.js`)}"></script>
</body>
</html>`;
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
