// The memory check before a SLURM submission: the estimator's per-rank peak (core/memory) at the
// job's world size, against what one rank gets on the partition's nodes — their GPU (launch.gpu,
// or the GPU type the partition's GRES names) or, on the CPU, the node's memory shared by its
// tasks. A queue wait that ends in an out-of-memory error costs hours, so it is asked before.
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu, hostTarget } from '../../core/memory/gpu-presets';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { formatBytes } from '../../core/memory/summary';
import type { ResolvedRunConfig } from '../../core/config/run-config';

/** What one node of the partition offers (sinfo). */
export interface PartitionNodes {
  name: string;
  gpuType?: string;
  memoryBytes?: number;
}

export interface JobMemoryCheck {
  /** undefined: the target's memory is not known, so nothing can be said. */
  fits: boolean | undefined;
  perRankBytes?: number;
  capacityBytes?: number;
  /** One sentence for the person: what was compared with what. */
  message: string;
}

export function jobMemoryCheck(
  configText: string,
  fileName: string,
  config: ResolvedRunConfig,
  partition: PartitionNodes | undefined,
): JobMemoryCheck {
  const world = (config.launch.nnodes ?? 1) * (config.launch.nproc_per_node ?? 1);
  const perNode = config.launch.nproc_per_node ?? 1;
  const where = partition ? `partition ${partition.name}` : 'the default partition';
  const cuda = config.launch.device === 'cuda';
  const gpuName = cuda ? (config.launch.gpu ?? partition?.gpuType) : undefined;
  const gpu = gpuName ? findGpu(gpuName) : undefined;
  if (cuda && !gpu) {
    return {
      fits: undefined,
      message: gpuName
        ? `the GPU type "${gpuName}" of ${where} is not one the estimator knows; set launch.gpu (e.g. H100-80GB)`
        : `${where} does not name its GPU type; set launch.gpu for a memory check`,
    };
  }
  const read = readConfigForEstimate(configText, fileName, gpu ? { gpu: gpu.id } : {}, 'run-config');
  if (isConfigInputError(read)) return { fits: undefined, message: read.error };
  let input = read.input;
  if (!cuda) {
    if (!partition?.memoryBytes)
      return { fits: undefined, message: `${where} does not say how much memory its nodes have` };
    input = {
      ...input,
      gpu: {
        ...hostTarget(Math.floor(partition.memoryBytes / perNode)),
        name: `a node's memory / ${perNode} task${perNode > 1 ? 's' : ''}`,
      },
    };
  }
  const estimate = estimateMemory(input);
  const fit = estimate.fit;
  const perRankBytes = estimate.peak.total;
  if (!fit)
    return { fits: undefined, perRankBytes, message: `≈ ${formatBytes(perRankBytes)} per rank at ${world} ranks` };
  const verdict = fit.fits ? 'fits' : `does not fit: ${formatBytes(-fit.headroomBytes)} more than`;
  return {
    fits: fit.fits,
    perRankBytes,
    capacityBytes: fit.gpu.memoryBytes,
    message: `≈ ${formatBytes(perRankBytes)} per rank at ${world} ranks (${estimate.peakPhase}) ${verdict} ${fit.gpu.name} (${formatBytes(fit.gpu.memoryBytes)}) on ${where}`,
  };
}
