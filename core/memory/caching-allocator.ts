// PyTorch's CUDA caching allocator, replayed: what `torch.cuda.max_memory_allocated` and
// `max_memory_reserved` report for a sequence of tensor allocations and frees. The rules are those of
// c10/cuda/CUDACachingAllocator.cpp with its default settings (no PYTORCH_CUDA_ALLOC_CONF):
// - every request is rounded up to a multiple of 512 bytes (kMinBlockSize);
// - requests ≤ 1 MiB (kSmallSize) come from the small pool, carved out of 2 MiB segments; larger ones
//   from the large pool: a new segment is 20 MiB (kLargeBuffer) for requests under 10 MiB, else the
//   request rounded up to 2 MiB (kRoundLarge);
// - a request takes the smallest cached free block of its pool and stream that holds it (best fit);
//   the block is split only if what remains is ≥ 512 bytes (small pool) or > 1 MiB (large pool), so
//   a large request may be handed a block up to 1 MiB bigger than it asked for, and that whole block
//   counts as allocated;
// - a freed block merges with free neighbours of its own segment; segments are never returned to the
//   driver (no empty_cache), so reserved memory only grows: its peak is its final value;
// - a block belongs to the stream it was allocated on, and only allocations on that stream reuse it
//   (FSDP's reduce-scatter outputs live on their own stream).

const MIN_BLOCK = 512;
const SMALL_SIZE = 1 << 20;
const SMALL_BUFFER = 2 << 20;
const LARGE_BUFFER = 20 << 20;
const MIN_LARGE_ALLOC = 10 << 20;
const ROUND_LARGE = 2 << 20;

interface Block {
  size: number;
  addr: number;
  stream: number;
  small: boolean;
  allocated: boolean;
  prev: Block | undefined;
  next: Block | undefined;
}

/** The rounded size a request occupies at least (before any unsplit remainder). */
export function roundedRequest(bytes: number): number {
  return bytes < MIN_BLOCK ? MIN_BLOCK : Math.ceil(bytes / MIN_BLOCK) * MIN_BLOCK;
}

/** The segment cudaMalloc'ed when no cached block can serve a request of `size` (already rounded). */
function segmentSize(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_BUFFER;
  if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return Math.ceil(size / ROUND_LARGE) * ROUND_LARGE;
}

/** Free blocks of one pool ordered by (stream, size, address), as the allocator's std::set. */
class FreeBlocks {
  private readonly blocks: Block[] = [];

  private static before(a: Block, b: { stream: number; size: number; addr: number }): boolean {
    if (a.stream !== b.stream) return a.stream < b.stream;
    if (a.size !== b.size) return a.size < b.size;
    return a.addr < b.addr;
  }

  private lowerBound(key: { stream: number; size: number; addr: number }): number {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (FreeBlocks.before(this.blocks[mid], key)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  insert(b: Block): void {
    this.blocks.splice(this.lowerBound(b), 0, b);
  }

  remove(b: Block): void {
    const i = this.lowerBound(b);
    if (this.blocks[i] !== b) throw new Error('caching allocator replay: free block not found');
    this.blocks.splice(i, 1);
  }

  /** The smallest free block of `stream` holding `size`, taken out of the set. */
  take(stream: number, size: number): Block | undefined {
    const i = this.lowerBound({ stream, size, addr: -1 });
    const b = this.blocks[i];
    if (!b || b.stream !== stream) return undefined;
    this.blocks.splice(i, 1);
    return b;
  }
}

export class CachingAllocator {
  private readonly small = new FreeBlocks();
  private readonly large = new FreeBlocks();
  /** Live blocks by tensor id (ids are small consecutive integers). */
  private live: Array<Block | undefined> = [];
  private nextAddr = 0;
  /** Bytes in blocks handed out (block sizes, as allocated_bytes counts them). */
  allocated = 0;
  reserved = 0;
  peakAllocated = 0;
  peakReserved = 0;
  /** The largest segment cudaMalloc'ed: how much one request placed differently can change reserved memory. */
  largestSegment = 0;

  /** Allocates `bytes` for tensor `id` on `stream`; returns the size of the block handed out. */
  malloc(id: number, bytes: number, stream = 0): number {
    const size = roundedRequest(bytes);
    const small = size <= SMALL_SIZE;
    const pool = small ? this.small : this.large;
    let block = pool.take(stream, size);
    if (!block) {
      const segment = segmentSize(size);
      block = { size: segment, addr: this.nextAddr, stream, small, allocated: false, prev: undefined, next: undefined };
      this.nextAddr += segment;
      this.reserved += segment;
      this.peakReserved = Math.max(this.peakReserved, this.reserved);
      this.largestSegment = Math.max(this.largestSegment, segment);
    }
    const remaining = block.size - size;
    if (small ? remaining >= MIN_BLOCK : remaining > SMALL_SIZE) {
      // The front of the block is handed out; the rest stays cached.
      const rest: Block = {
        size: remaining,
        addr: block.addr + size,
        stream,
        small,
        allocated: false,
        prev: block,
        next: block.next,
      };
      if (block.next) block.next.prev = rest;
      block.next = rest;
      block.size = size;
      pool.insert(rest);
    }
    block.allocated = true;
    this.live[id] = block;
    this.allocated += block.size;
    this.peakAllocated = Math.max(this.peakAllocated, this.allocated);
    return block.size;
  }

  free(id: number): void {
    const block = this.live[id];
    if (!block) throw new Error(`caching allocator replay: tensor ${id} freed twice or never allocated`);
    this.live[id] = undefined;
    this.allocated -= block.size;
    block.allocated = false;
    const pool = block.small ? this.small : this.large;
    for (const neighbour of [block.prev, block.next]) {
      if (!neighbour || neighbour.allocated) continue;
      pool.remove(neighbour);
      if (neighbour === block.prev) {
        block.addr = neighbour.addr;
        block.prev = neighbour.prev;
        if (block.prev) block.prev.next = block;
      } else {
        block.next = neighbour.next;
        if (block.next) block.next.prev = block;
      }
      block.size += neighbour.size;
    }
    pool.insert(block);
  }

  /** The size of the segment tensor `id` lives in. */
  segmentOf(id: number): number {
    const block = this.live[id];
    if (!block) throw new Error(`caching allocator replay: tensor ${id} is not live`);
    let first = block;
    while (first.prev) first = first.prev;
    let size = 0;
    for (let b: Block | undefined = first; b; b = b.next) size += b.size;
    return size;
  }

  /** Starts a new measurement window, as torch.cuda.reset_peak_memory_stats(). */
  resetPeaks(): void {
    this.peakAllocated = this.allocated;
    this.peakReserved = this.reserved;
  }
}
