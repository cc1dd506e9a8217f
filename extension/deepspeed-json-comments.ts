// A DeepSpeed config written as .json with comments in it (DeepSpeed's hjson loader reads them) is
// shown as "JSON with Comments": VS Code's JSON mode would mark every comment an error. Whether the
// launcher used reads comments is the config server's warning (core/rules/deepspeed/json-comments.ts).
import * as vscode from 'vscode';
import { recogniseConfig } from '../core/config/document-kind';
import { jsonComments } from '../core/config/json-comments';

export function showDeepSpeedCommentsAsJsonc(): vscode.Disposable {
  const look = (doc: vscode.TextDocument) => {
    if (doc.languageId !== 'json' || doc.uri.scheme !== 'file') return;
    const text = doc.getText();
    if (recogniseConfig(doc.fileName, text) !== 'deepspeed' || jsonComments(text).length === 0) return;
    void vscode.languages.setTextDocumentLanguage(doc, 'jsonc');
  };
  vscode.workspace.textDocuments.forEach(look);
  return vscode.Disposable.from(
    vscode.workspace.onDidOpenTextDocument(look),
    // A comment typed into an open config.
    vscode.workspace.onDidChangeTextDocument((e) => look(e.document)),
  );
}
