// The memory estimate inline on every recognised config: a CodeLens on the section that decides
// most of the memory ("≈ 23.4 GiB / GPU (params 3.1 · …) — fits H100 80GB") that opens the
// memory estimator panel, and a warning, with quick fixes, when the config does not fit its
// target (launch.gpu, the config's "fsdp-studio: gpu=…" comment, or the fsdp.estimator.gpu setting).
// While the config has an error (other than an unknown key), the lens stays with the last good estimate, marked stale; an
// estimate that cannot be made (an unknown model, a shape no model has) is a warning of its own.
import os from 'node:os';
import type { CodeLens } from 'vscode-languageserver/node';
import type { ConfigAnalysis } from '../../core/config/config-analysis';
import type { ConfigProblem } from '../../core/config/schema-problems';
import type { SourceRange } from '../../core/config/source-document';
import { configMemory, type ConfigMemory } from '../../core/memory/config-memory';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import type { ModelSource } from '../../core/memory/inputs/model-from-options';
import {
  CHOOSE_MODEL_COMMAND,
  MODEL_CHOICES_NOTIFICATION,
  type ChooseModelArgs,
  type ModelChoicesParams,
} from '../../core/memory/model-choice';
import { fileNameOf, type ConfigServer } from '../config-server';
import type { ServerFeature } from './feature';

/** The command the lens runs (contributed by the extension): opens the panel on the document. */
export const OPEN_ESTIMATOR_COMMAND = 'fsdp.openMemoryEstimator';

/** What the lens shows in front of the last good estimate while the config has an error. */
export const STALE_PREFIX = '(stale: the config has an error) ';

type Outcome = { memory: ConfigMemory } | { error: string; range?: SourceRange } | { stale: true };

export const memoryHints: ServerFeature = {
  capabilities: { codeLensProvider: { resolveProvider: false } },
  register(server) {
    // An analysis is made once per document version and settings; so is its estimate, per model chosen.
    const outcomes = new WeakMap<ConfigAnalysis, { choice: string | undefined; outcome: Outcome }>();
    // The models chosen in the editor's picker for configs that name none, by file (model-choice.ts).
    let choices: Record<string, string> = {};
    server.connection.onNotification(MODEL_CHOICES_NOTIFICATION, (params: ModelChoicesParams) => {
      choices = { ...params.choices };
      for (const doc of server.documents.all()) void server.refresh(doc.uri);
      // The lenses are asked for by the editor; tell it they changed (a client without it asks again on edit).
      void server.connection.sendRequest('workspace/codeLens/refresh').catch(() => undefined);
    });
    // The last estimate made for each document, shown (stale) while the config has an error.
    const lastGood = new Map<string, { title: string; detail: string; range: SourceRange }>();
    const outcomeOf = (analysis: ConfigAnalysis, uri: string): Outcome => {
      const choice = Object.prototype.hasOwnProperty.call(choices, uri) ? choices[uri] : undefined;
      const known = outcomes.get(analysis);
      if (known && known.choice === choice) return known.outcome;
      let outcome: Outcome;
      // A config with errors gets its diagnostics, not a guess; a typo (an unknown key) is not such
      // an error here: the estimate reads the keys it knows, as for a ds_config (whose DeepSpeed
      // ignores unknown keys) so for an accelerate config (whose accelerate refuses them).
      if (analysis.problems.some((p) => p.severity === 'error' && p.code !== 'schema.unknown-key'))
        outcome = { stale: true };
      else {
        const files =
          analysis.fileName.startsWith('/') || /^[A-Za-z]:[\\/]/.test(analysis.fileName)
            ? hfModelSource(analysis.fileName)
            : undefined;
        const source = choice ? withChoice(files, choice) : files;
        const m = configMemory(
          analysis.kind,
          analysis.doc.text,
          analysis.fileName,
          { gpu: server.settingsOf(uri).estimator?.gpu ?? undefined, hostMemoryBytes: os.totalmem() },
          source,
        );
        outcome = 'error' in m ? m : { memory: m };
        if ('memory' in outcome)
          lastGood.set(uri, {
            title: outcome.memory.title,
            detail: outcome.memory.detail,
            range: outcome.memory.read.anchor,
          });
      }
      outcomes.set(analysis, { choice, outcome });
      return outcome;
    };
    server.addProblemSource((analysis) => {
      const uri = uriOf(server, analysis);
      if (!uri) return [];
      const outcome = outcomeOf(analysis, uri);
      if ('memory' in outcome) return outcome.memory.problem ? [outcome.memory.problem] : [];
      if ('error' in outcome && outcome.range) return [noEstimate(outcome.error, outcome.range)];
      return [];
    });
    server.connection.onCodeLens(({ textDocument }): CodeLens[] => {
      const analysis = server.analysisOf(textDocument.uri);
      if (!analysis) return [];
      const outcome = outcomeOf(analysis, textDocument.uri);
      // The title fits the editor; the breakdown and the model's origin are its tooltip.
      const command = (title: string, detail: string) => ({
        title,
        tooltip: `${detail}\n(click for the memory estimator)`,
        command: OPEN_ESTIMATOR_COMMAND,
        arguments: [textDocument.uri],
      });
      if ('memory' in outcome && outcome.memory.askModel) {
        const ask = outcome.memory.askModel;
        const args: ChooseModelArgs = {
          uri: textDocument.uri,
          why: ask.why,
          ...(ask.family ? { family: { name: ask.family.name, presets: ask.family.presets } } : {}),
        };
        return [
          {
            range: outcome.memory.read.anchor,
            command: {
              title: outcome.memory.title,
              tooltip: outcome.memory.detail,
              command: CHOOSE_MODEL_COMMAND,
              arguments: [args],
            },
          },
        ];
      }
      if ('memory' in outcome)
        return [{ range: outcome.memory.read.anchor, command: command(outcome.memory.title, outcome.memory.detail) }];
      const last = lastGood.get(textDocument.uri);
      if ('stale' in outcome && last)
        return [
          {
            range: clamp(last.range, analysis.doc.text),
            command: command(`${STALE_PREFIX}${last.title}`, last.detail),
          },
        ];
      return [];
    });
    server.documents.onDidClose(({ document }) => lastGood.delete(document.uri));
  },
};

/** The files' model source, with the model chosen in the editor's picker named before what the files name. */
function withChoice(files: ModelSource | undefined, choice: string): ModelSource {
  return {
    resolve: (ref) => files?.resolve(ref),
    named: () => ({ ref: choice, where: 'your choice' }),
    ...(files?.readFile ? { readFile: files.readFile } : {}),
  };
}

/** A problem that keeps the estimate from being made, where it is (an unknown model, an impossible shape). */
function noEstimate(error: string, range: SourceRange): ConfigProblem {
  // Errors arrive as "file:line:col path: message"; the editor shows the place itself.
  const message = error.replace(/^.*?:\d+:\d+ /, '');
  return {
    severity: 'warning',
    path: [],
    code: 'memory.no-estimate',
    message: `no memory estimate: ${message}`,
    range,
  };
}

/** The last lens's range, kept inside a document that may have got shorter. */
function clamp(range: SourceRange, text: string): SourceRange {
  const lines = text.split('\n').length;
  if (range.start.line < lines) return range;
  return { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
}

function uriOf(server: ConfigServer, analysis: ConfigAnalysis): string | undefined {
  return server.documents.all().find((d) => fileNameOf(d.uri) === analysis.fileName)?.uri;
}
