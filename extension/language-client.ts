// Starts the config language server (dist/language-server.js) for YAML and JSON files. The client
// only connects the editor: which files are configs, and everything about them, is the server's.
import path from 'node:path';
import type * as vscode from 'vscode';
import {
  LanguageClient,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { MODEL_CHOICES_NOTIFICATION, type ModelChoicesParams } from '../core/memory/model-choice';
import { modelChoices } from './commands/choose-model';
import type { StudioContext } from './studio-context';

/** The running client; `restart` starts the server again (e.g. once the native addon is built). */
export interface ConfigChecks extends vscode.Disposable {
  restart(): Promise<void>;
  /** Tells the server the models chosen for configs that name none (core/memory/model-choice.ts). */
  sendModelChoices(params: ModelChoicesParams): Promise<void>;
}

export async function startConfigLanguageClient(studio: StudioContext): Promise<ConfigChecks> {
  const module = path.join(studio.extension.extensionPath, 'dist', 'language-server.js');
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.ipc },
    debug: { module, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6011'] } },
  };
  const clientOptions: LanguageClientOptions = {
    // The server decides by name and content which of these are configs; it leaves the rest alone.
    // VS Code has no TOML language of its own: the extension contributes the id (torchtitan configs).
    documentSelector: ['yaml', 'json', 'jsonc', 'toml'].flatMap((language) => [
      { scheme: 'file', language },
      { scheme: 'untitled', language },
    ]),
    synchronize: { configurationSection: 'fsdp' },
    initializationOptions: { nativeAddonPath: studio.runtime.addonPath },
  };
  const client = new LanguageClient('fsdpConfigs', 'FSDP Studio config checks', serverOptions, clientOptions);
  try {
    await client.start();
    studio.output.info('config language server started');
    await sendChoices();
  } catch (e) {
    // The rest of the extension works without config checks; say why they are missing.
    studio.output.error(`the config language server did not start: ${(e as Error).message}`);
  }
  // The models chosen for configs that name none, kept in the workspace's state: the server has them from its start.
  async function sendChoices(params: ModelChoicesParams = { choices: modelChoices(studio.extension.workspaceState) }) {
    if (client.isRunning()) await client.sendNotification(MODEL_CHOICES_NOTIFICATION, params);
  }
  return {
    dispose: () => void client.stop().catch(() => undefined),
    sendModelChoices: sendChoices,
    restart: async () => {
      // The addon path is read by the server at start-up.
      client.clientOptions.initializationOptions = { nativeAddonPath: studio.runtime.addonPath };
      await client
        .restart()
        .then(() => sendChoices())
        .catch((e: Error) => studio.output.error(`restarting the config language server failed: ${e.message}`));
    },
  };
}
