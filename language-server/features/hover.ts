// Hover: what a key means (description, allowed values, default) and, over a problem, the rule
// behind it with its source.
import type { Hover, Position } from 'vscode-languageserver/node';
import { describeAllowed, schemaAt } from '../../core/config/schema-walk';
import type { SourceRange } from '../../core/config/source-document';
import { TORCHTITAN_RELEASE } from '../../core/config/torchtitan-config';
import { ruleInfo } from '../../core/rules/catalog';
import type { ServerFeature } from './feature';

export const hover: ServerFeature = {
  capabilities: { hoverProvider: true },
  register(server) {
    server.connection.onHover((params): Hover | null => {
      const analysis = server.analysisOf(params.textDocument.uri);
      if (!analysis) return null;
      const { doc } = analysis;
      const loc = doc.locate(doc.offsetAt(params.position));
      const key = loc.word.text.replace(/^["']|["']$/g, '');
      const path = loc.part === 'key' ? [...loc.path, key] : loc.path;
      const sections: string[] = [];
      const node = key || loc.part === 'value' ? schemaAt(analysis.schema, path) : undefined;
      if (node) {
        const lines = [`**${path.join('.')}**${node.deprecated ? ' *(deprecated)*' : ''}`];
        if (node.description) lines.push(node.description);
        const allowed = describeAllowed(node);
        if (allowed) lines.push(`Allowed: ${allowed}`);
        if (node.default !== undefined) lines.push(`Default: \`${JSON.stringify(node.default)}\``);
        // The TOML job files ended with torchtitan 0.2.x: say which release a key is read as.
        if (analysis.kind === 'torchtitan')
          lines.push(
            `As torchtitan ${TORCHTITAN_RELEASE} reads its TOML job config. torchtitan 0.3 configures runs with Python functions returning \`Trainer.Config\`: their memory shows above each function in the .py file.`,
          );
        sections.push(lines.join('\n\n'));
      }
      for (const p of server
        .publishedProblems(params.textDocument.uri)
        .filter((q) => contains(q.range, params.position))) {
        const rule = ruleInfo(p.code);
        sections.push(
          [`**${p.severity}** (${p.code}): ${p.message}`, rule?.why, rule ? `Source: ${rule.source}` : undefined]
            .filter(Boolean)
            .join('\n\n'),
        );
      }
      if (!sections.length) return null;
      return {
        contents: { kind: 'markdown', value: sections.join('\n\n---\n\n') },
        range: { start: doc.positionAt(loc.word.start), end: doc.positionAt(loc.word.end) },
      };
    });
  },
};

function contains(range: SourceRange, pos: Position): boolean {
  const after =
    pos.line > range.start.line || (pos.line === range.start.line && pos.character >= range.start.character);
  const before = pos.line < range.end.line || (pos.line === range.end.line && pos.character <= range.end.character);
  return after && before;
}
