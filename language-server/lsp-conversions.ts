// Between core's problems and fixes and LSP's diagnostics and edits.
import { DiagnosticSeverity, type Diagnostic, type TextEdit } from 'vscode-languageserver/node';
import type { ConfigAnalysis } from '../core/config/config-analysis';
import { yamlVersionOf } from '../core/config/config-analysis';
import { applyConfigEdits, replacementBetween, type ConfigFix } from '../core/config/config-edits';
import type { ConfigProblem } from '../core/config/schema-problems';

export const DIAGNOSTIC_SOURCE = 'fsdp';

const SEVERITY = {
  error: DiagnosticSeverity.Error,
  warning: DiagnosticSeverity.Warning,
  information: DiagnosticSeverity.Information,
  hint: DiagnosticSeverity.Hint,
} as const;

export function toDiagnostic(p: ConfigProblem): Diagnostic {
  return {
    range: p.range,
    severity: SEVERITY[p.severity],
    code: p.code,
    source: DIAGNOSTIC_SOURCE,
    message: p.path.length ? `${p.path.join('.')}: ${p.message}` : p.message,
  };
}

/** The text edit that applies `fix` to the analysed text. */
export function textEditFor(analysis: ConfigAnalysis, fix: ConfigFix): TextEdit {
  const before = analysis.doc.text;
  const after = applyConfigEdits(before, fix.edits, {
    kind: analysis.doc.kind,
    yamlVersion: yamlVersionOf(analysis.kind),
  });
  const r = replacementBetween(before, after);
  return {
    range: { start: analysis.doc.positionAt(r.start), end: analysis.doc.positionAt(r.end) },
    newText: r.newText,
  };
}
