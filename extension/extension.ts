// Extension entry: everything is owned by one StudioContext, so start-up and shutdown read in one place.
import type * as vscode from 'vscode';
import { StudioContext } from './studio-context';

let studio: StudioContext | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  studio = new StudioContext(context);
  await studio.start();
}

export async function deactivate(): Promise<void> {
  await studio?.dispose();
  studio = undefined;
}
