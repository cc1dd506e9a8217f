// "Launch" where a config can be launched, and nowhere else: the CodeLens at the top of a run
// config or a launch spec (*.fsdp-launch.yaml, a person's own command) and the editor-title button,
// shown by the context key `fsdp.launchableEditor` for the active editor. A file is recognised as
// core/config/document-kind.ts does for the language server (fsdp.files.associations, then the
// name, then the keys at the top), so a DeepSpeed or accelerate config, or any other YAML file,
// gets neither.
import * as vscode from 'vscode';
import { recogniseConfig, type ConfigAssociation, type ConfigKind } from '../core/config/document-kind';

export const LAUNCHABLE_CONTEXT = 'fsdp.launchableEditor';
/** Kinds of config "Launch FSDP run" starts. */
const LAUNCHABLE: ReadonlySet<ConfigKind> = new Set(['run-config', 'launch-spec']);
/** Re-checks the active editor this long after its last edit (the keys at the top may change). */
const EDIT_SETTLE_MS = 300;

export function configKindOf(document: vscode.TextDocument): ConfigKind | undefined {
  const associations =
    vscode.workspace
      .getConfiguration('fsdp', document.uri)
      .get<Record<string, ConfigAssociation>>('files.associations') ?? {};
  return recogniseConfig(document.uri.path, document.getText(), associations);
}

export function isLaunchable(document: vscode.TextDocument): boolean {
  const kind = configKindOf(document);
  return kind !== undefined && LAUNCHABLE.has(kind);
}

export function registerLaunchLens(): vscode.Disposable {
  const provider: vscode.CodeLensProvider = {
    provideCodeLenses(document) {
      if (!isLaunchable(document)) return [];
      const top = new vscode.Range(0, 0, 0, 0);
      return [
        new vscode.CodeLens(top, {
          title: '$(rocket) Launch',
          tooltip: 'FSDP: Launch FSDP run with this config',
          command: 'fsdp.launchRun',
          arguments: [document.uri],
        }),
      ];
    },
  };
  let pending: NodeJS.Timeout | undefined;
  const update = () => {
    clearTimeout(pending);
    pending = undefined;
    const editor = vscode.window.activeTextEditor;
    void vscode.commands.executeCommand(
      'setContext',
      LAUNCHABLE_CONTEXT,
      !!editor && editor.document.uri.scheme === 'file' && isLaunchable(editor.document),
    );
  };
  update();
  return vscode.Disposable.from(
    vscode.languages.registerCodeLensProvider([{ language: 'yaml', scheme: 'file' }], provider),
    vscode.window.onDidChangeActiveTextEditor(update),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === vscode.window.activeTextEditor?.document) {
        clearTimeout(pending);
        pending = setTimeout(update, EDIT_SETTLE_MS);
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('fsdp.files.associations') && update()),
    { dispose: () => clearTimeout(pending) },
  );
}
