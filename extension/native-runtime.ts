// Finds the native runtime built by `npm install` (native/build/Release) and loads its addon.
// The addon gives the editor the runtime's own answers (device probe, validation, memory plan);
// training always runs in a separate process started from the CLI, never in the editor.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface DeviceProbe {
  cpu: { logicalCores: number; ompMaxThreads: number; memoryBytes: number; modelName: string };
  gpus: Array<{ index: number; name: string; memoryBytes: number; computeCapability: string }>;
  cudaBuilt: boolean;
  blas: string;
}

/** The functions the addon exports; later ones are optional until the runtime provides them. */
export interface NativeAddon {
  probeDevices(): DeviceProbe;
  validateConfig?(config: object): { ok: boolean; errors: Array<{ path: string; message: string }> };
  memoryPlan?(config: object): Record<string, unknown>;
  smokeStep?(config: object): Record<string, unknown>;
}

export class NativeRuntime {
  readonly buildDir: string;
  private addon: NativeAddon | undefined;
  private loadError: string | undefined;

  constructor(extensionPath: string) {
    this.buildDir = path.join(extensionPath, 'native', 'build', 'Release');
  }

  get addonPath(): string {
    return path.join(this.buildDir, 'fsdp_native.node');
  }

  get cliPath(): string {
    return path.join(this.buildDir, 'fsdp-train-native');
  }

  isBuilt(): boolean {
    return existsSync(this.addonPath) && existsSync(this.cliPath);
  }

  /** The addon, or undefined with `lastError()` saying why it could not be loaded. */
  load(): NativeAddon | undefined {
    if (this.addon || this.loadError) return this.addon;
    if (!existsSync(this.addonPath)) {
      this.loadError = `the native runtime is not built (${this.addonPath} is missing); run npm install in the extension folder`;
      return undefined;
    }
    try {
      // A require made at run time keeps esbuild from trying to bundle the binary module.
      this.addon = createRequire(__filename)(this.addonPath) as NativeAddon;
    } catch (e) {
      this.loadError = `the native addon failed to load: ${(e as Error).message}`;
    }
    return this.addon;
  }

  lastError(): string | undefined {
    return this.loadError;
  }

  /** What the CLI says it can do (`--version` JSON): e.g. ["probe", "train"]. */
  async capabilities(): Promise<string[]> {
    if (!existsSync(this.cliPath)) return [];
    try {
      const { stdout } = await execFileAsync(this.cliPath, ['--version'], { timeout: 10_000 });
      const info = JSON.parse(stdout) as { capabilities?: string[] };
      return info.capabilities ?? [];
    } catch {
      return ['probe'];
    }
  }
}
