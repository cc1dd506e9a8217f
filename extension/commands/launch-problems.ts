// A launch refused for something in its config says what and where, and takes the person there:
// "Go to problem" selects the offending key or value, "Open config" opens the file. A launch that
// failed for another reason offers the output, where the whole story is.
import * as vscode from 'vscode';
import { parseSourceDocument, sourceKindOf, type SourceRange } from '../../core/config/source-document';

/** A config problem: the message, and actions to the file (at `range` when known). */
export async function showConfigProblem(uri: vscode.Uri, message: string, range?: SourceRange): Promise<void> {
  const actions = range ? ['Go to problem', 'Open config'] : ['Open config'];
  const pick = await vscode.window.showErrorMessage(message, ...actions);
  if (!pick) return;
  const editor = await vscode.window.showTextDocument(uri, { preview: false });
  if (pick === 'Go to problem' && range) {
    const r = new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
    editor.selection = new vscode.Selection(r.start, r.end);
    editor.revealRange(r, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }
}

/** Where a dotted key path (`data.train`, `launch.target`) is in a config's text: its value, else its nearest parent. */
export function rangeOfKeyPath(text: string, fileName: string, dotted: string): SourceRange | undefined {
  if (!dotted) return undefined;
  try {
    const doc = parseSourceDocument(text, sourceKindOf(fileName));
    const path = dotted.split('.').map((part) => (/^\d+$/.test(part) ? Number(part) : part));
    return doc.rangeOf(path, 'value');
  } catch {
    return undefined;
  }
}

/** A launch that failed past the config: the message, with the output channel that has the details. */
export async function showLaunchFailure(
  output: vscode.LogOutputChannel,
  uri: vscode.Uri,
  message: string,
): Promise<void> {
  const pick = await vscode.window.showErrorMessage(message, 'Show output', 'Open config');
  if (pick === 'Show output') output.show(true);
  if (pick === 'Open config') await vscode.window.showTextDocument(uri, { preview: false });
}
