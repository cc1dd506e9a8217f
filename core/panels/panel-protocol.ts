// Messages between the extension host and a webview panel. Each panel defines its own message
// unions in this folder (e.g. dashboard-messages.ts); these two are common to all of them.

/** Sent by the webview once its script has loaded and it can receive messages. */
export interface PanelReadyMessage {
  type: 'ready';
}

/** Every message type a panel exchanges has a string `type` discriminator. */
export interface PanelMessage {
  type: string;
}
