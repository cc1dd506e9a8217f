// Memory a CUDA process holds besides its tensors. These constants are the model's calibration
// points: the measured fixtures (test/fixtures/measured/) record each of them, and
// test/unit/memory-accuracy.test.ts checks the estimate against those measurements.
import type { MemoryInput } from '../memory-input';
import { worldSize } from '../memory-input';
import { constantTerm, type TermSpec } from './term-spec';

const MiB = 1024 * 1024;

/** CUDA context with PyTorch's kernels loaded lazily (CUDA ≥ 11.7 lazy loading): about half a GiB. */
export const CUDA_CONTEXT_BYTES = 512 * MiB;
/** cuBLAS + cuBLASLt workspaces PyTorch allocates through its caching allocator on Hopper. */
export const CUBLAS_WORKSPACE_BYTES = 32 * MiB;
/** NCCL's own buffers per communicator (default NCCL_BUFFSIZE 4 MiB over its channels). */
export const NCCL_COMMUNICATOR_BYTES = 256 * MiB;
/** Reserved over allocated in PyTorch's caching allocator at a training step's peak. */
export const CACHING_ALLOCATOR_FRAGMENTATION = 0.05;

/** Context, cuBLAS workspace and NCCL buffers of a PyTorch process on a GPU. */
export function pytorchProcessTerms(input: MemoryInput, communicators: number): TermSpec[] {
  if (input.device !== 'cuda') return [];
  const terms: TermSpec[] = [
    { ...constantTerm('other.cuda-context', 'other', 'CUDA context and loaded kernels', CUDA_CONTEXT_BYTES), outsideAllocator: true },
    constantTerm('workspace.cublas', 'workspace', 'cuBLAS / cuBLASLt workspace', CUBLAS_WORKSPACE_BYTES),
  ];
  if (worldSize(input) > 1 && communicators > 0) {
    terms.push({ ...constantTerm('comm.nccl', 'comm', `NCCL buffers (${communicators} communicator${communicators > 1 ? 's' : ''})`, communicators * NCCL_COMMUNICATOR_BYTES), outsideAllocator: true });
  }
  return terms;
}
