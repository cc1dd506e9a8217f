// "Any config the runtime itself rejects": the native runtime validates the resolved config with
// the same code that runs it (the addon's validateConfig), so its verdict is the ground truth. It is
// asked only about schema-valid configs, since it receives the resolved (defaults filled) config,
// and only for runs of this machine's build (here, or on SLURM from this machine as the login
// host): a run on SSH hosts is checked by their runtime, with their own data files and build.
import path from 'node:path';
import { resolveRunConfig, type RunConfig } from '../../config/run-config';
import { report, valueAt, type ConfigRule, type RuleContext, type RuntimeVerdict } from '../rule';

export const runtimeRejects: ConfigRule = {
  code: 'run.runtime',
  why: 'The native runtime checks the resolved config with the code that will run it (fsdp_native.node validateConfig); anything it rejects would fail at launch.',
  source: 'native/src/addon/addon.cc: validateConfig',
  check(ctx) {
    const validate = ctx.env.validateRunConfig;
    const target = valueAt(ctx.value, ['launch', 'target']);
    // A run across launch.hosts runs each host's own build, not this one.
    if (
      !validate ||
      (target !== undefined && target !== 'local') ||
      valueAt(ctx.value, ['launch', 'hosts']) !== undefined
    )
      return [];
    const resolved = resolveRunConfig(ctx.value as unknown as RunConfig, path.dirname(path.resolve(ctx.fileName)));
    let verdict: RuntimeVerdict;
    try {
      verdict = validate(resolved);
    } catch (e) {
      return [
        report(ctx, this, {
          path: [],
          severity: 'warning',
          message: `the runtime's config check failed: ${(e as Error).message}`,
        }),
      ];
    }
    return [
      ...verdict.errors.map((p) => problem(ctx, p, 'error', 'the runtime rejects this config')),
      ...verdict.warnings.map((p) => problem(ctx, p, 'warning', 'the runtime warns')),
    ];
  },
};

function problem(ctx: RuleContext, p: { path: string; message: string }, severity: 'error' | 'warning', lead: string) {
  const keys = p.path ? p.path.split('.').filter(Boolean) : [];
  // The runtime may name a key the file leaves to its default: point at the nearest one present.
  while (keys.length && !ctx.doc.has(keys)) keys.pop();
  return report(ctx, runtimeRejects, {
    path: keys,
    severity,
    message: `${lead}: ${p.path ? `${p.path}: ` : ''}${p.message}`,
  });
}
