// The native runtime's own config check (fsdp_native.node validateConfig), when the addon is built
// and exports it. Without it the server still checks schemas and rules; it says so once in its log.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RuntimeVerdict } from '../core/rules/rule';

export interface RuntimeValidation {
  /** Present when the addon is loaded and has validateConfig. */
  validateConfig?: (resolved: object) => RuntimeVerdict;
  /** Why runtime validation is on or off, for the log. */
  status: string;
  /** The addon's path, for the analysis threads to load their own copy. */
  addonPath?: string;
}

interface AddonWithValidation {
  validateConfig?(config: object): {
    ok: boolean;
    errors?: RuntimeVerdict['errors'];
    warnings?: RuntimeVerdict['warnings'];
  };
}

/** The default addon location, relative to the bundled server (dist/language-server.js). */
export function defaultAddonPath(): string {
  return path.resolve(__dirname, '..', 'native', 'build', 'Release', 'fsdp_native.node');
}

export function loadRuntimeValidation(addonPath: string): RuntimeValidation {
  if (!existsSync(addonPath))
    return { status: `runtime validation off: the native runtime is not built (${addonPath} is missing)` };
  let addon: AddonWithValidation;
  try {
    // Loaded at run time so esbuild leaves the binary module alone.
    addon = createRequire(__filename)(addonPath) as AddonWithValidation;
  } catch (e) {
    return { status: `runtime validation off: the native addon failed to load: ${(e as Error).message}` };
  }
  const validate = addon.validateConfig;
  if (typeof validate !== 'function') return { status: `runtime validation off: ${addonPath} has no validateConfig` };
  return {
    status: `runtime validation on: ${addonPath}`,
    addonPath,
    validateConfig: (resolved) => {
      const r = validate.call(addon, resolved);
      return { errors: r.errors ?? [], warnings: r.warnings ?? [] };
    },
  };
}
