// The "Launch" CodeLens at the top of every run config (a YAML file with model, data and training).
import * as vscode from 'vscode';
import { isRunConfigText } from './run-configs';

export function registerLaunchLens(): vscode.Disposable {
  const provider: vscode.CodeLensProvider = {
    provideCodeLenses(document) {
      if (!isRunConfigText(document.getText())) return [];
      const top = new vscode.Range(0, 0, 0, 0);
      return [new vscode.CodeLens(top, { title: '$(rocket) Launch', tooltip: 'FSDP: Launch FSDP run with this config', command: 'fsdp.launchRun', arguments: [document.uri] })];
    },
  };
  return vscode.languages.registerCodeLensProvider([{ language: 'yaml', scheme: 'file' }], provider);
}
