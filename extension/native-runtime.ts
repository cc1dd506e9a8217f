// Finds the native runtime — built by `npm install` (native/build/Release) in a source checkout, or
// on first use for an installed extension (runs/local-runtime.ts) — and loads its addon.
// The addon gives the editor the runtime's own answers (device probe, validation, memory plan);
// training always runs in a separate process started from the CLI, never in the editor.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BlasKernels } from '../core/protocol/blas-kernels';
import type { MemoryByCategory, MemoryPlan } from '../core/protocol/metrics';

const execFileAsync = promisify(execFile);

export interface DeviceProbe {
  cpu: { logicalCores: number; ompMaxThreads: number; memoryBytes: number; modelName: string };
  gpus: Array<{ index: number; name: string; memoryBytes: number; computeCapability: string }>;
  cudaBuilt: boolean;
  blas: string;
  /** The editor's own process: OpenBLAS's detection, as the addon loads before the runtime could choose (runs choose at their start). */
  blasKernels: BlasKernels;
}

/** A problem the runtime finds in a config: `path` is the dotted key (e.g. "model.n_heads"). */
export interface NativeConfigProblem {
  path: string;
  message: string;
}

/** The runtime's memory plan (native/MEMORY.md): the protocol's MemoryPlan plus what it was made for. */
export type NativeMemoryPlan = MemoryPlan & {
  host: MemoryByCategory;
  phases: { forward: number; backward: number; optimizer: number };
  activation_checkpointing: { policy: 'none' | 'every_n' | 'selective'; every_n_layers: number };
  world: { size: number; shard_degree: number; strategy: string };
  n_params: number;
};

/** One forward/backward of the configured model on a tiny random batch (no training, no data files). */
export interface SmokeStepResult {
  /** null when not finite. */
  loss: number | null;
  /** ln(vocab_size): what an untrained model should give. */
  expected_loss: number;
  grad_norm: number;
  init_ms: number;
  forward_backward_ms: number;
  tokens: number;
  n_params: number;
  mem_peak: number;
  backend: string;
  threads: number;
}

/**
 * The functions the addon exports. Each takes a resolved run config (resolveRunConfig); absent
 * keys take the schema's defaults.
 */
export interface NativeAddon {
  probeDevices(): DeviceProbe;
  /** The runtime's own checks (relations between keys, what this build runs, the data files). */
  validateConfig(config: object): { ok: boolean; errors: NativeConfigProblem[]; warnings: NativeConfigProblem[] };
  /** Bytes per rank by category, without allocating; throws when the config cannot be read. */
  memoryPlan(config: object): NativeMemoryPlan;
  /** Runs off the editor's thread; rejects with the runtime's problems for a config it cannot run. */
  smokeStep(config: object): Promise<SmokeStepResult>;
}

export class NativeRuntime {
  readonly buildDir: string;
  private addon: NativeAddon | undefined;
  private loadError: string | undefined;

  /** `buildDir`: where the runtime is (default: the checkout's native/build/Release). */
  constructor(extensionPath: string, buildDir?: string) {
    this.buildDir = buildDir ?? path.join(extensionPath, 'native', 'build', 'Release');
  }

  /** After a build: the addon is loaded again on next use. */
  reset(): void {
    this.addon = undefined;
    this.loadError = undefined;
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
      this.loadError = `the native runtime is not built yet (${this.addonPath} is missing): it is built on the first launch, or with "FSDP: Build native runtime"`;
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
