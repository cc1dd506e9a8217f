// The caching-allocator replay (core/memory/caching-allocator.ts) on allocation sequences built by
// hand, each rule of c10/cuda/CUDACachingAllocator.cpp (default settings) with the numbers it
// implies: what is reserved (segments cudaMalloc'ed), what counts as allocated (whole blocks), and
// which cached block a request reuses.
import assert from 'node:assert/strict';
import { CachingAllocator, roundedRequest } from '../../core/memory/caching-allocator';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Allocates `sizes` as tensors 1, 2, … and returns the allocator. */
function withTensors(...sizes: number[]): CachingAllocator {
  const a = new CachingAllocator();
  sizes.forEach((s, i) => a.malloc(i + 1, s));
  return a;
}

describe("caching allocator replay: PyTorch's rules on constructed sequences", () => {
  it('rounds every request up to 512 bytes (kMinBlockSize), and at least 512', () => {
    assert.equal(roundedRequest(1), 512);
    assert.equal(roundedRequest(512), 512);
    assert.equal(roundedRequest(513), 1024);
    assert.equal(roundedRequest(3 * MiB + 1), 3 * MiB + 512);
    const a = withTensors(100);
    assert.equal(a.allocated, 512, 'a 100-byte tensor holds a 512-byte block');
  });

  it('packs requests up to 1 MiB (kSmallSize) into 2 MiB segments (kSmallBuffer) of the small pool', () => {
    const a = withTensors(MiB, 600 * KiB, 400 * KiB);
    assert.equal(a.reserved, 2 * MiB, '1 MiB + 600 KiB + 400 KiB share one segment; 24 KiB are left');
    a.malloc(4, 100 * KiB);
    assert.equal(a.reserved, 4 * MiB, '100 KiB do not fit the 24 KiB left: a second segment');
  });

  it('gives a request of more than 1 MiB and less than 10 MiB a 20 MiB segment (kLargeBuffer), shared by the next ones', () => {
    const a = withTensors(MiB + 512, 9 * MiB, 9 * MiB);
    assert.equal(a.reserved, 20 * MiB, '1 MiB + 9 MiB + 9 MiB fit one 20 MiB segment');
    a.malloc(4, 2 * MiB);
    assert.equal(a.reserved, 40 * MiB, 'the 1 MiB left does not hold 2 MiB: another 20 MiB segment');
  });

  it('gives a request of 10 MiB or more (kMinLargeAlloc) a segment of its own size rounded up to 2 MiB (kRoundLarge)', () => {
    const a = withTensors(10 * MiB, 33 * MiB + 1);
    assert.equal(a.reserved, 10 * MiB + 34 * MiB);
    assert.equal(a.largestSegment, 34 * MiB);
  });

  it('keeps small and large requests apart: a freed 20 MiB block does not serve a 4 KiB request', () => {
    const a = withTensors(5 * MiB);
    a.free(1);
    a.malloc(2, 4 * KiB);
    assert.equal(a.reserved, 20 * MiB + 2 * MiB);
  });

  it('reuses the smallest cached block that holds a request (best fit), not the first or the largest', () => {
    const a = withTensors(40 * MiB, 12 * MiB, 30 * MiB);
    for (const id of [1, 2, 3]) a.free(id);
    a.malloc(4, 11 * MiB);
    assert.equal(a.segmentOf(4), 12 * MiB, 'the 12 MiB segment, the smallest that holds 11 MiB');
    assert.equal(a.reserved, 82 * MiB, 'nothing new reserved');
    a.malloc(5, 25 * MiB);
    assert.equal(a.segmentOf(5), 30 * MiB);
  });

  it('splits a large block only when more than 1 MiB would remain; otherwise the whole block counts as allocated', () => {
    const a = withTensors(20 * MiB);
    a.free(1);
    a.malloc(2, 19 * MiB + 512 * KiB); // 512 KiB would remain: not split
    assert.equal(a.allocated, 20 * MiB, 'the unsplit remainder counts as allocated');
    a.free(2);
    a.malloc(3, 18 * MiB); // 2 MiB would remain: split
    assert.equal(a.allocated, 18 * MiB);
    a.malloc(4, 2 * MiB);
    assert.equal(a.reserved, 20 * MiB, 'the 2 MiB remainder served the next request');
  });

  it('splits a small block whenever at least 512 bytes remain', () => {
    const a = withTensors(MiB, MiB - 512);
    assert.equal(a.allocated, 2 * MiB - 512, 'both in one 2 MiB segment, 512 bytes left as a block of their own');
    a.malloc(3, 512);
    assert.equal(a.reserved, 2 * MiB, 'the last 512 bytes of the segment served it');
    a.malloc(4, 512);
    assert.equal(a.reserved, 4 * MiB);
  });

  it('merges a freed block with free neighbours of its segment, so a request the size of the whole segment fits again', () => {
    const a = withTensors(12 * MiB);
    a.free(1);
    a.malloc(2, 4 * MiB);
    a.malloc(3, 4 * MiB);
    a.malloc(4, 4 * MiB);
    for (const id of [3, 2, 4]) a.free(id); // middle first: it merges with each side as they go
    a.malloc(5, 12 * MiB);
    assert.equal(a.reserved, 12 * MiB);
  });

  it('never merges across segments: two adjacent free 10 MiB segments do not hold 12 MiB', () => {
    const a = withTensors(10 * MiB, 10 * MiB);
    a.free(1);
    a.free(2);
    a.malloc(3, 12 * MiB);
    assert.equal(a.reserved, 32 * MiB);
  });

  it("keeps each stream's blocks for that stream (FSDP's reduce-scatter stream has its own pool)", () => {
    const a = new CachingAllocator();
    a.malloc(1, 16 * MiB, 1);
    a.free(1);
    a.malloc(2, 16 * MiB, 0);
    assert.equal(a.reserved, 32 * MiB, "the default stream cannot take the other stream's cached block");
  });

  it('never returns segments: reserved memory only grows, and its peak survives a new measurement window', () => {
    const a = withTensors(100 * MiB);
    a.free(1);
    assert.equal(a.reserved, 100 * MiB);
    a.resetPeaks();
    assert.equal(a.peakReserved, 100 * MiB);
    assert.equal(a.peakAllocated, 0);
  });

  it('reserves a new segment when the free space is there but split: fragmentation', () => {
    // Two 30 MiB tensors in a row of segments, the first freed, a 40 MiB request: 30 MiB free is not enough.
    const a = withTensors(30 * MiB, 30 * MiB);
    a.free(1);
    a.malloc(3, 40 * MiB);
    assert.equal(a.reserved, 100 * MiB);
    assert.equal(a.peakAllocated, 70 * MiB);
  });
});
