// GPU targets. A capacity is what a CUDA process can use: the device's total as CUDA reports it
// (cudaMemGetInfo, torch.cuda.get_device_properties().total_memory), which is below nvidia-smi's
// memory.total by what the driver keeps (ECC, row remapping: 480 MiB on the H100 measured here).
// What must fit in it is the caching allocator's reserved peak plus the CUDA context (the estimate's
// peak), which is what nvidia-smi shows as used. Sources, one per preset:
// - H100 80GB: 85,017,493,504 bytes, measured (test/fixtures/measured, cudaMemGetInfo, driver 580.159);
// - A100 80GB: 81,049 MiB, CUDA "Total global mem" of an A100 80GB PCIe (ekondis/mixbench#47);
// - A100 40GB: 42,298,834,944 bytes, deviceQuery of an A100-SXM4-40GB (bottlerocket-os/bottlerocket#3873);
// - RTX 4090: 24,563 MiB, torch total_memory (public device dump);
// - H200 141GB, L4: nvidia-smi's total (143,771 / 23,034 MiB; no CUDA-reported total at hand, so up
//   to ~0.5–0.9 GiB optimistic).
// computeCapability decides cuBLAS's default workspace (32 MiB per handle on 9.x/10.x, else 8.125 MiB).
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface GpuSpec {
  id: string;
  name: string;
  memoryBytes: number;
  /** CUDA context, cuBLAS workspace and fragmentation are modelled for GPUs, not for the host. */
  kind: 'gpu' | 'host';
  /** major.minor; absent for custom sizes and the host. */
  computeCapability?: number;
}

export const GPU_PRESETS: readonly GpuSpec[] = [
  { id: 'A100-40GB', name: 'A100 40GB', memoryBytes: 42_298_834_944, kind: 'gpu', computeCapability: 8.0 },
  { id: 'A100-80GB', name: 'A100 80GB', memoryBytes: 81_049 * MiB, kind: 'gpu', computeCapability: 8.0 },
  { id: 'H100-80GB', name: 'H100 80GB', memoryBytes: 85_017_493_504, kind: 'gpu', computeCapability: 9.0 },
  { id: 'H200-141GB', name: 'H200 141GB', memoryBytes: 143_771 * MiB, kind: 'gpu', computeCapability: 9.0 },
  { id: 'L4-24GB', name: 'L4 24GB', memoryBytes: 23_034 * MiB, kind: 'gpu', computeCapability: 8.9 },
  { id: 'RTX4090-24GB', name: 'RTX 4090 24GB', memoryBytes: 24_563 * MiB, kind: 'gpu', computeCapability: 8.9 },
];

/**
 * Reads a GPU name: a preset id or a loose form of it ("h100", "A100 80GB", "rtx 4090"), or a
 * custom capacity ("48GiB", "custom:48GiB", "32GB" = 32×10⁹ bytes). Undefined if unrecognised.
 */
export function findGpu(name: string): GpuSpec | undefined {
  const custom = /^(?:custom[:=]?)?\s*(\d+(?:\.\d+)?)\s*(GiB|GB)$/i.exec(name.trim());
  if (custom) {
    const bytes = Math.round(Number(custom[1]) * (custom[2].toLowerCase() === 'gib' ? GiB : 1e9));
    return {
      id: `custom-${custom[1]}${custom[2]}`,
      name: `custom ${custom[1]} ${custom[2]}`,
      memoryBytes: bytes,
      kind: 'gpu',
    };
  }
  const key = squash(name)
    .replace(/^nvidia/, '')
    .replace(/(sxm\d?|pcie|nvl|hbm\d?e?)/g, '');
  const exact = GPU_PRESETS.find((g) => squash(g.id) === key || squash(g.name) === key);
  if (exact) return exact;
  // A bare family name picks its largest variant ("a100" → A100 80GB), as people mostly mean.
  const family = GPU_PRESETS.filter((g) => squash(g.id).startsWith(key) && key.length >= 2);
  return family.sort((a, b) => b.memoryBytes - a.memoryBytes)[0];
}

/** Why `name` cannot be a target (unknown, or a custom size no GPU has), or undefined when it can. */
export function gpuProblem(name: string): string | undefined {
  const gpu = findGpu(name);
  if (!gpu) return `"${name}" is not a GPU preset (${GPU_PRESETS.map((g) => g.id).join(', ')}) or a size like 48GiB`;
  if (gpu.id.startsWith('custom-') && !(gpu.memoryBytes >= MIN_CUSTOM && gpu.memoryBytes <= MAX_CUSTOM))
    return `a GPU of ${name} cannot hold a training run; give a size from 1 GiB to 16 TiB`;
  return undefined;
}

const MIN_CUSTOM = GiB;
const MAX_CUSTOM = 16 * 1024 * GiB;

/** The host's memory as a target, for CPU runs of our runtime. */
export function hostTarget(memoryBytes: number): GpuSpec {
  return { id: 'host', name: 'host memory', memoryBytes, kind: 'host' };
}

function squash(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
    .replace(/geforce/, '');
}
