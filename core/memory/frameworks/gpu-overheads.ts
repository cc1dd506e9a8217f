// Memory a CUDA process holds outside PyTorch's caching allocator, and the cuBLAS workspaces it
// holds inside it. Each is a measured or documented quantity, not a fitted one.
import type { MemoryInput } from '../memory-input';
import { worldSize } from '../memory-input';
import { CUBLASLT_WORKSPACE_BYTES, cublasWorkspaceBytes } from './pytorch-replay';
import { constantTerm, type TermInfo, type TermSpec } from './term-spec';

const MiB = 1024 * 1024;

/**
 * The CUDA context with PyTorch's kernels loaded lazily (CUDA ≥ 11.7), as measured on an H100 with
 * PyTorch 2.11 / CUDA 13 (test/fixtures/measured: `cuda_context_bytes`, 751,632,384 bytes used after
 * init and one matmul, less the 32 MiB cuBLAS workspace and the 2 MiB segment of cuBLASLt's that it
 * includes). Kernels loaded later (attention, fused optimizers) add a few MiB to what nvidia-smi shows.
 */
export const CUDA_CONTEXT_BYTES = 751_632_384 - 32 * MiB - 2 * MiB;
/** NCCL's own buffers per communicator (default NCCL_BUFFSIZE 4 MiB over its channels). */
export const NCCL_COMMUNICATOR_BYTES = 256 * MiB;
/** Reserved over allocated for frameworks whose allocations are not replayed (DeepSpeed). */
export const CACHING_ALLOCATOR_FRAGMENTATION = 0.05;

/** The process's memory outside the allocator: CUDA context, NCCL communicators. */
export function processOverheads(input: MemoryInput, communicators: number): Array<{ info: TermInfo; bytes: number }> {
  if (input.device !== 'cuda') return [];
  const out: Array<{ info: TermInfo; bytes: number }> = [
    {
      info: {
        id: 'other.cuda-context',
        category: 'other',
        label: 'CUDA context and loaded kernels',
        where: 'device',
        outsideAllocator: true,
      },
      bytes: CUDA_CONTEXT_BYTES,
    },
  ];
  if (worldSize(input) > 1 && communicators > 0) {
    out.push({
      info: {
        id: 'comm.nccl',
        category: 'comm',
        label: `NCCL buffers (${communicators} communicator${communicators > 1 ? 's' : ''})`,
        where: 'device',
        outsideAllocator: true,
      },
      bytes: communicators * NCCL_COMMUNICATOR_BYTES,
    });
  }
  return out;
}

/** The same, plus the cuBLAS workspaces, as constant terms for the formula-based frameworks. */
export function pytorchProcessTerms(input: MemoryInput, communicators: number): TermSpec[] {
  if (input.device !== 'cuda') return [];
  const cublas = 2 * cublasWorkspaceBytes(input.gpu?.computeCapability) + CUBLASLT_WORKSPACE_BYTES;
  return [
    ...processOverheads(input, communicators).map(({ info, bytes }) => ({
      ...constantTerm(info.id, info.category, info.label, bytes),
      outsideAllocator: true,
    })),
    constantTerm(
      'workspace.cublas',
      'workspace',
      "cuBLAS workspaces (the forward thread's and autograd's) and cuBLASLt's",
      cublas,
    ),
  ];
}
