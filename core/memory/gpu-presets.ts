// GPU targets. Capacities are the totals `nvidia-smi --query-gpu=memory.total` reports (MiB),
// which is what a process can see, not the marketing figure: an "80 GB" H100 shows 81559 MiB.
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface GpuSpec {
  id: string;
  name: string;
  memoryBytes: number;
  /** CUDA context, cuBLAS workspace and fragmentation are modelled for GPUs, not for the host. */
  kind: 'gpu' | 'host';
}

export const GPU_PRESETS: readonly GpuSpec[] = [
  { id: 'A100-40GB', name: 'A100 40GB', memoryBytes: 40960 * MiB, kind: 'gpu' },
  { id: 'A100-80GB', name: 'A100 80GB', memoryBytes: 81920 * MiB, kind: 'gpu' },
  { id: 'H100-80GB', name: 'H100 80GB', memoryBytes: 81559 * MiB, kind: 'gpu' },
  { id: 'H200-141GB', name: 'H200 141GB', memoryBytes: 143771 * MiB, kind: 'gpu' },
  { id: 'L4-24GB', name: 'L4 24GB', memoryBytes: 23034 * MiB, kind: 'gpu' },
  { id: 'RTX4090-24GB', name: 'RTX 4090 24GB', memoryBytes: 24564 * MiB, kind: 'gpu' },
];

/**
 * Reads a GPU name: a preset id or a loose form of it ("h100", "A100 80GB", "rtx 4090"), or a
 * custom capacity ("48GiB", "custom:48GiB", "32GB" = 32×10⁹ bytes). Undefined if unrecognised.
 */
export function findGpu(name: string): GpuSpec | undefined {
  const custom = /^(?:custom[:=]?)?\s*(\d+(?:\.\d+)?)\s*(GiB|GB)$/i.exec(name.trim());
  if (custom) {
    const bytes = Math.round(Number(custom[1]) * (custom[2].toLowerCase() === 'gib' ? GiB : 1e9));
    return { id: `custom-${custom[1]}${custom[2]}`, name: `custom ${custom[1]} ${custom[2]}`, memoryBytes: bytes, kind: 'gpu' };
  }
  const key = squash(name).replace(/^nvidia/, '').replace(/(sxm\d?|pcie|nvl|hbm\d?e?)/g, '');
  const exact = GPU_PRESETS.find((g) => squash(g.id) === key || squash(g.name) === key);
  if (exact) return exact;
  // A bare family name picks its largest variant ("a100" → A100 80GB), as people mostly mean.
  const family = GPU_PRESETS.filter((g) => squash(g.id).startsWith(key) && key.length >= 2);
  return family.sort((a, b) => b.memoryBytes - a.memoryBytes)[0];
}

/** The host's memory as a target, for CPU runs of our runtime. */
export function hostTarget(memoryBytes: number): GpuSpec {
  return { id: 'host', name: 'host memory', memoryBytes, kind: 'host' };
}

function squash(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]/g, '').replace(/geforce/, '');
}
