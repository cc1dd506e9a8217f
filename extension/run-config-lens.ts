// The "Launch" CodeLens at the top of every run config (a YAML file with model, data and training)
// and every launch spec (*.fsdp-launch.yaml, a person's own command).
import * as vscode from 'vscode';
import { recogniseConfig } from '../core/config/document-kind';
import { isRunConfigText } from './run-configs';

export function registerLaunchLens(): vscode.Disposable {
  const provider: vscode.CodeLensProvider = {
    provideCodeLenses(document) {
      const text = document.getText();
      if (!isRunConfigText(text) && recogniseConfig(document.uri.fsPath, text) !== 'launch-spec') return [];
      const top = new vscode.Range(0, 0, 0, 0);
      return [new vscode.CodeLens(top, { title: '$(rocket) Launch', tooltip: 'FSDP: Launch FSDP run with this config', command: 'fsdp.launchRun', arguments: [document.uri] })];
    },
  };
  return vscode.languages.registerCodeLensProvider([{ language: 'yaml', scheme: 'file' }], provider);
}
