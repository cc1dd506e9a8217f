// A cross-field rule: a small pure function over a parsed config that returns problems, with the
// source that says why (a documentation page or the tool's own code) so hover can show it.
import type { ConfigFix } from '../config/config-edits';
import type { ConfigProblem, ProblemSeverity } from '../config/schema-problems';
export { valueAt } from '../config/schema-problems';
import type { ConfigPath, SourceDocument } from '../config/source-document';

/** Settings that change what a rule concludes; the editor's `fsdp.*` settings. */
export interface AnalysisSettings {
  /** World size DeepSpeed configs are run with (fsdp.deepspeed.worldSize), when known. */
  deepspeedWorldSize?: number;
  /**
   * How DeepSpeed configs are launched (fsdp.deepspeed.launchedWith): through Hugging Face (the
   * Trainer or accelerate fill in "auto" values), with deepspeed.initialize alone, or unknown.
   */
  deepspeedLaunchedWith: 'unknown' | 'huggingface' | 'deepspeed';
}

export const DEFAULT_SETTINGS: AnalysisSettings = { deepspeedLaunchedWith: 'unknown' };

/** What the analysis may use besides the text: settings, other files, the runtime. */
export interface AnalysisEnvironment {
  settings: AnalysisSettings;
  /** Reads a file a config refers to (accelerate's deepspeed_config_file); undefined when unreadable. */
  readFile?: (absolutePath: string) => string | undefined;
  /** The runtime's own check of a resolved run config (the native addon's validateConfig), when built. */
  validateRunConfig?: (resolved: object) => RuntimeVerdict;
}

/** What the runtime says of a config: errors it refuses to run, warnings it would run with. */
export interface RuntimeVerdict {
  errors: Array<{ path: string; message: string }>;
  warnings: Array<{ path: string; message: string }>;
}

export interface RuleContext {
  doc: SourceDocument;
  /** The parsed config; an object (rules run only on mappings). */
  value: Record<string, unknown>;
  fileName: string;
  env: AnalysisEnvironment;
}

export interface ConfigRule {
  /** Stable id, used as the diagnostic code: `deepspeed.batch-size`. */
  code: string;
  /** Why the rule exists, in a sentence or two: shown on hover. */
  why: string;
  /** Where the behaviour comes from: a documentation URL or `file: function` of the tool's source. */
  source: string;
  check(ctx: RuleContext): ConfigProblem[];
}

export interface Finding {
  path: ConfigPath;
  part?: 'key' | 'value';
  severity: ProblemSeverity;
  message: string;
  fixes?: ConfigFix[];
}

/** A problem of `rule` at `path`, its range taken from the document. */
export function report(ctx: RuleContext, rule: Pick<ConfigRule, 'code'>, f: Finding): ConfigProblem {
  return {
    severity: f.severity,
    path: f.path,
    code: rule.code,
    message: f.message,
    range: ctx.doc.rangeOf(f.path, f.part ?? 'value'),
    fixes: f.fixes,
  };
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
