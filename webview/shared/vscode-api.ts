// The webview side of a panel: typed messages to and from the extension host, and state that
// survives the panel being hidden (VS Code destroys hidden webviews; getState/setState persist).
import type { PanelMessage } from '../../core/panels/panel-protocol';

interface VsCodeApi<State> {
  postMessage(message: unknown): void;
  getState(): State | undefined;
  setState(state: State): void;
}

declare function acquireVsCodeApi<State>(): VsCodeApi<State>;

export interface PanelConnection<ToHost extends PanelMessage, FromHost extends PanelMessage, State> {
  send(message: ToHost): void;
  /** Registers the message handler, then tells the host this webview is ready. */
  listen(handler: (message: FromHost) => void): void;
  getState(): State | undefined;
  setState(state: State): void;
}

let api: VsCodeApi<unknown> | undefined;

export function connectToHost<ToHost extends PanelMessage, FromHost extends PanelMessage, State>(): PanelConnection<
  ToHost,
  FromHost,
  State
> {
  api ??= acquireVsCodeApi<unknown>(); // may be called only once per webview
  const vscode = api as VsCodeApi<State>;
  return {
    send: (message) => vscode.postMessage(message),
    listen: (handler) => {
      window.addEventListener('message', (event: MessageEvent<FromHost>) => handler(event.data));
      vscode.postMessage({ type: 'ready' });
    },
    getState: () => vscode.getState(),
    setState: (state) => vscode.setState(state),
  };
}
