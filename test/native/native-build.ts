// Where the tests find the native build (made by scripts/setup/native.mjs, which npm test runs).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { NativeAddon } from '../../extension/native-runtime';

export const repoRoot = path.resolve(__dirname, '..', '..');
export const buildDir = path.join(repoRoot, 'native', 'build', 'Release');
export const nativeCli = path.join(buildDir, 'fsdp-train-native');
export const gtestBinary = path.join(buildDir, 'fsdp-native-tests');

export function loadAddon(): NativeAddon {
  const file = path.join(buildDir, 'fsdp_native.node');
  if (!existsSync(file)) throw new Error(`${file} is missing: build the runtime with node scripts/setup/native.mjs`);
  return createRequire(__filename)(file) as NativeAddon;
}
