// "Any config the runtime itself rejects": the native runtime validates the resolved config with
// the same code that runs it (the addon's validateConfig), so its verdict is the ground truth. It is
// asked only about schema-valid configs, since it receives the resolved (defaults filled) config.
import path from 'node:path';
import { resolveRunConfig, type RunConfig } from '../../config/run-config';
import { report, type ConfigRule } from '../rule';

export const runtimeRejects: ConfigRule = {
  code: 'run.runtime',
  why: 'The native runtime checks the resolved config with the code that will run it (fsdp_native.node validateConfig); anything it rejects would fail at launch.',
  source: 'native/src/addon/addon.cc: validateConfig',
  check(ctx) {
    const validate = ctx.env.validateRunConfig;
    if (!validate) return [];
    const resolved = resolveRunConfig(ctx.value as unknown as RunConfig, path.dirname(path.resolve(ctx.fileName)));
    let errors: Array<{ path: string; message: string }>;
    try {
      errors = validate(resolved);
    } catch (e) {
      return [report(ctx, this, { path: [], severity: 'warning', message: `the runtime's config check failed: ${(e as Error).message}` })];
    }
    return errors.map((err) => {
      const keys = err.path ? err.path.split('.').filter(Boolean) : [];
      // The runtime may name a key the file leaves to its default: point at the nearest one present.
      while (keys.length && !ctx.doc.has(keys)) keys.pop();
      return report(ctx, this, { path: keys, severity: 'error', message: `the runtime rejects this config: ${err.path ? `${err.path}: ` : ''}${err.message}` });
    });
  },
};
