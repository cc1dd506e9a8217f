// The PyTorch replay against PyTorch's own order of allocations and frees (test/fixtures/pytorch-op-
// order/, recorded by test/reference/trace_allocations.py from PyTorch 2.13 on the CPU): three
// training steps of the harness's GPT, plain and autocast, without checkpointing, checkpointing
// every block, and selective. The caching allocator's reserved memory depends on which tensors are
// live when each request comes, so the replay must make the same requests in the same order: every
// allocation of 1 KiB or more (smaller ones are scalars and biases), with the same bytes live at it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { replayTraining } from '../../core/memory/frameworks/pytorch-replay';
import type { MemoryInput } from '../../core/memory/memory-input';

const DIR = path.join(__dirname, '..', 'fixtures', 'pytorch-op-order');
type Event = [kind: 'a' | 'f', id: number, bytes: number, what: string, phase: string];

/** The harness's GPT as trace_allocations.py's defaults make it, on the CPU. */
function input(precision: string, checkpointing: string): MemoryInput {
  const dtype = precision === 'bf16' ? 'bfloat16' : 'float32';
  return {
    framework: 'pytorch',
    device: 'cpu',
    model: {
      name: 'custom',
      vocabSize: 1000,
      dModel: 64,
      nLayers: 2,
      nHeads: 2,
      nKvHeads: 2,
      ffnHidden: 256,
      mlp: 'gelu',
      norm: 'layernorm',
      bias: true,
      positionEmbeddings: 32,
      tieEmbeddings: true,
    },
    seqLen: 32,
    microBatch: 8,
    gradAccumSteps: 1,
    strategy: 'NO_SHARD',
    nprocPerNode: 1,
    nnodes: 1,
    precision: { param: dtype, reduce: 'float32', activation: dtype },
    checkpointing: {
      policy: checkpointing === 'every' ? 'every_n' : (checkpointing as 'none' | 'selective'),
      everyN: 1,
    },
    offload: { optimizer: false, params: false },
    attention: 'flash',
    dropout: 0,
    fsdp: { backwardPrefetch: 'BACKWARD_PRE', forwardPrefetch: false },
    ddp: { bucketCapMb: 25, gradientAsBucketView: false },
    zero: {
      reduceBucketSize: 5e8,
      allgatherBucketSize: 5e8,
      prefetchBucketSize: 5e7,
      maxLiveParameters: 1e9,
      paramPersistenceThreshold: 1e5,
      contiguousGradients: true,
    },
  };
}

function replayEvents(i: MemoryInput): Event[] {
  const events: Event[] = [];
  let phase = 'setup';
  replayTraining(
    i,
    {
      alloc: (id, bytes, term, _stream, host) => !host && events.push(['a', id, bytes, term, phase]),
      free: (id) => events.push(['f', id, 0, '', phase]),
      phase: (step, p) => {
        phase = p === 'setup' ? 'setup' : `${step}/${p}`;
      },
    },
    3,
  );
  return events;
}

/** Allocations of at least 1 KiB after set-up, each with the bytes (of such allocations) live once it is made. */
function requests(events: Event[]): Array<{ phase: string; bytes: number; live: number; what: string }> {
  const size = new Map<number, number>();
  const out: Array<{ phase: string; bytes: number; live: number; what: string }> = [];
  let live = 0;
  for (const [kind, id, bytes, what, phase] of events) {
    if (kind === 'a') {
      size.set(id, bytes);
      if (bytes < 1024) continue;
      live += bytes;
      if (phase !== 'setup') out.push({ phase, bytes, live, what });
    } else if ((size.get(id) ?? 0) >= 1024) live -= size.get(id)!;
  }
  return out;
}

describe('PyTorch replay: the order PyTorch allocates and frees in (recorded traces)', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

  it('has a recorded trace for each precision and checkpointing policy', () => {
    assert.deepEqual(
      files.sort(),
      ['bf16', 'fp32'].flatMap((p) => ['every', 'none', 'selective'].map((c) => `gpt-${p}-${c}.json`)).sort(),
    );
  });

  for (const file of files) {
    const [, precision, checkpointing] = /^gpt-(\w+)-(\w+)\.json$/.exec(file)!;
    it(`${precision}, checkpointing ${checkpointing}: the same requests, in order, with the same bytes live at each`, () => {
      const recorded = JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as { command: string; events: Event[] };
      assert.match(recorded.command, new RegExp(`--checkpointing ${checkpointing} --precision ${precision}`));
      const want = requests(recorded.events);
      const got = requests(replayEvents(input(precision, checkpointing)));
      const first = want.findIndex((w, i) => !got[i] || got[i].bytes !== w.bytes || got[i].live !== w.live);
      const at = (r: (typeof want)[number] | undefined) =>
        r ? `${r.phase} ${r.bytes} B (${r.what}), ${r.live} B live` : 'nothing';
      assert.equal(first, -1, `request ${first}: PyTorch ${at(want[first])}, replay ${at(got[first])}`);
      assert.equal(got.length, want.length, 'as many requests');
    });
  }
});
