// The PyTorch replay (core/memory/frameworks/pytorch*.ts) against values computed by hand for a tiny
// GPT: d_model 8, 2 blocks, 2 heads, vocabulary 16, 8 positions, MLP 32, tied head; micro-batch
// 2 × 8 = 16 tokens. On 'cpu' there is no caching allocator, cuBLAS workspace or context, so every
// number is a sum of tensor sizes.
import assert from 'node:assert/strict';
import { estimateMemory } from '../../core/memory/estimate';
import { replayTraining, type ReplayTerm } from '../../core/memory/frameworks/pytorch-replay';
import type { MemoryEstimate, Phase } from '../../core/memory/memory-estimate';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import type { ModelShape } from '../../core/memory/model-shape';

const TINY: ModelShape = {
  name: 'tiny',
  vocabSize: 16,
  dModel: 8,
  nLayers: 2,
  nHeads: 2,
  nKvHeads: 2,
  ffnHidden: 32,
  mlp: 'gelu',
  norm: 'layernorm',
  bias: true,
  positionEmbeddings: 8,
  tieEmbeddings: true,
};
// embedding 16·8 + 8·8 = 192; block: two LayerNorms 32, qkv 192+24, proj 64+8, fc 256+32, fc2 256+8 = 872; final LN 16.
const P = 192 + 2 * 872 + 16;
const t = 16; // tokens
const C = 8;
const V = 16;

function tiny(over: Partial<MemoryInput> = {}): MemoryInput {
  return { ...defaultMemoryInput(TINY, 8), device: 'cpu', microBatch: 2, strategy: 'NO_SHARD', ...over };
}

/** The most bytes of one replay term live at once during step 2's `phase`. */
function maxLive(input: MemoryInput, which: ReplayTerm, phase: Phase): number {
  const live = new Map<number, number>();
  let now = 0;
  let max = 0;
  let measuring = false;
  replayTraining(
    input,
    {
      alloc(id, bytes, t, _stream, host) {
        if (host || t !== which) return;
        live.set(id, bytes);
        now += bytes;
        if (measuring) max = Math.max(max, now);
      },
      free(id) {
        now -= live.get(id) ?? 0;
        live.delete(id);
      },
      phase(step, p) {
        measuring = step === 2 && p === phase;
      },
    },
    2,
  );
  return max;
}

function term(e: MemoryEstimate, id: string, phase: Phase): number {
  const found = e.terms.find((x) => x.id === id);
  assert.ok(found, `no term ${id}; terms: ${e.terms.map((x) => x.id).join(', ')}`);
  return found.bytes[phase];
}

// What a block saves in fp32 (bytes), besides its input: LayerNorm stats 16·8, norm output 16·8·4,
// q/k/v 16·24·4, attention output 16·8·4, logsumexp 2 (batch)·2 (heads)·32 (rows padded to 32)·4,
// the residual sum, second norm stats and output, fc output and GELU output 16·32·4 each, and the
// block's output (the next one's input).
const blockSaved = 128 + 512 + 1536 + 512 + 512 + 512 + 128 + 512 + 2048 + 2048 + 512;

describe('PyTorch replay: tiny GPT, fp32, flash attention, one GPU', () => {
  const e = estimateMemory(tiny());

  it('keeps fp32 parameters and AdamW moments; gradients and the foreach intermediate exist at the step', () => {
    assert.equal(blockSaved, 8960);
    assert.equal(term(e, 'params.master', 'forward'), 4 * P);
    assert.equal(term(e, 'optimizer.adamw', 'forward'), 8 * P, 'moments made in step 1 stay');
    assert.equal(term(e, 'grads.fp32', 'forward'), 0, 'zero_grad(set_to_none) freed them');
    assert.equal(term(e, 'grads.fp32', 'optimizer'), 4 * P);
    assert.equal(term(e, 'workspace.optimizer', 'optimizer'), 4 * P, 'sqrt(exp_avg_sq), one per parameter');
    assert.equal(term(e, 'other.batch', 'forward'), 2 * t * 8, 'int64 token ids and targets');
  });

  it("ends forward at the loss: every block's saved tensors, the final norm, the logits and log_softmax's output", () => {
    // embedding + positions (512), two blocks, final norm stats (128) and output (512).
    assert.equal(term(e, 'activations.saved', 'forward'), 512 + 2 * blockSaved + 128 + 512);
    assert.equal(term(e, 'activations.logits', 'forward'), 2 * t * V * 4);
  });

  it("peaks at the loss's backward: everything forward saved, the logits, log_softmax's output and their two gradients", () => {
    // nll_loss's backward makes a V-wide gradient, log_softmax's another before either is freed; no
    // parameter gradient exists yet (zero_grad(set_to_none) freed step 1's).
    assert.equal(term(e, 'activations.saved', 'backward'), 512 + 2 * blockSaved + 128 + 512);
    assert.equal(term(e, 'activations.logits', 'backward'), 4 * t * V * 4);
    assert.equal(term(e, 'grads.fp32', 'backward'), 0);
    assert.equal(term(e, 'activations.grads', 'backward'), 0);
    assert.equal(e.peakPhase, 'backward');
  });

  it('bf16 autocast: weight copies for every linear and the head, fp32 residual stream, bf16 matmul outputs, an fp32 upcast for the loss', () => {
    const b = estimateMemory(tiny({ precision: { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' } }));
    // weights 192+64+256+256 and biases 24+8+32+8 per block in bf16, and the head's 16·8 copy.
    assert.equal(term(b, 'params.autocast-copies', 'forward'), 2 * (2 * (768 + 72)) + 2 * V * C);
    // Per block: stats 2·128, bf16 norm outputs 2·256, q/k/v 768, attention out 256, logsumexp 512,
    // fp32 residual sum and output 2·512, fc and GELU outputs 2·1024 → 5376; plus the embeddings' 512
    // and the final norm (stats 128, bf16 output 256).
    assert.equal(term(b, 'activations.saved', 'forward'), 512 + 2 * 5376 + 128 + 256);
    // bf16 logits (512), their fp32 copy (1024) and log_softmax's output (1024), all live inside the loss.
    assert.equal(term(b, 'activations.logits', 'forward'), 512 + 1024 + 1024);
  });

  it("every_n checkpointing keeps a block's input only; its backward recomputes the rest", () => {
    const c = estimateMemory(tiny({ checkpointing: { policy: 'every_n', everyN: 1 } }));
    // Recomputed in a block's backward: everything it saves but its input, up to the down projection's input (not its output).
    assert.equal(
      maxLive(tiny({ checkpointing: { policy: 'every_n', everyN: 1 } }), 'recompute', 'backward'),
      blockSaved - 512,
    );
    const every2 = estimateMemory(tiny({ checkpointing: { policy: 'every_n', everyN: 2 } }));
    assert.ok(
      term(every2, 'activations.saved', 'backward') > term(c, 'activations.saved', 'backward'),
      'block 0 is not checkpointed with every_n:2',
    );
  });

  it('selective checkpointing keeps matmul and attention outputs (and the input), recomputing norms, GELU and residual sums', () => {
    // Recomputed: two norms' stats and outputs (2·640), the residual sum (512) and the GELU output (2048).
    assert.equal(
      maxLive(tiny({ checkpointing: { policy: 'selective', everyN: 1 } }), 'recompute', 'backward'),
      2 * 640 + 512 + 2048,
    );
  });

  it('eager attention keeps the batch·heads·s² probabilities and a contiguous copy of its output instead of the logsumexp', () => {
    const eager = estimateMemory(tiny({ attention: 'eager' }));
    const probs = 2 * 2 * 8 * 8 * 4;
    assert.equal(
      term(eager, 'activations.saved', 'forward') - term(e, 'activations.saved', 'forward'),
      2 * (probs - 512),
    );
  });
});

describe('PyTorch replay: sharding', () => {
  it('FULL_SHARD over 4 ranks keeps a quarter of parameters, moments and (reduce-scattered) gradients', () => {
    const e = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4 }));
    // Dim 0 of every tensor padded to 4: the tiny GPT's tensors all divide evenly.
    assert.equal(term(e, 'params.master', 'forward'), P);
    assert.equal(term(e, 'optimizer.adamw', 'forward'), 2 * P);
    assert.equal(term(e, 'grads.fp32', 'optimizer'), P);
  });

  it("gathers the root unit for all of forward and backward, plus a block's parameters and its all-gather buffer", () => {
    const e = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4 }));
    assert.equal(term(e, 'comm.gathered', 'forward'), 4 * (208 + 2 * 872));
    // In backward the block's own parameters and the next block's prefetched all-gather.
    assert.equal(term(e, 'comm.gathered', 'backward'), 4 * (208 + 2 * 872));
    // The peak: the last block's down projection has made its input's gradient (2048) beside the
    // residual's (512), and its weight and bias gradients (32·8·4 + 8·4); the head's and final norm's
    // (512 + 64) wait for the root's reduce-scatter.
    assert.equal(term(e, 'grads.unsharded', 'backward'), 512 + 64 + 1056);
    assert.equal(term(e, 'activations.grads', 'backward'), 512 + 2048);
  });

  it('one rank copies the shard instead of all-gathering: no all-gather buffer', () => {
    const e = estimateMemory(tiny({ strategy: 'FULL_SHARD', nprocPerNode: 1 }));
    assert.equal(term(e, 'comm.gathered', 'forward'), 4 * (208 + 872));
  });

  it('DDP holds a second copy of the gradients in its buckets unless gradients are bucket views', () => {
    assert.equal(term(estimateMemory(tiny({ nprocPerNode: 2 })), 'comm.ddp-buckets', 'forward'), 4 * P);
    assert.equal(
      term(
        estimateMemory(tiny({ nprocPerNode: 2, ddp: { bucketCapMb: 25, gradientAsBucketView: true } })),
        'comm.ddp-buckets',
        'forward',
      ),
      0,
    );
  });

  it('offload moves parameter shards, gradients and moments to host memory, counted per node', () => {
    const e = estimateMemory(
      tiny({ strategy: 'FULL_SHARD', nprocPerNode: 4, offload: { optimizer: true, params: true } }),
    );
    // shard P/4·4, moments 2·P/4·4, gradients P/4·4, and the step's intermediate P/4·4.
    assert.equal(e.host.perRank, P + 2 * P + P + P);
    assert.equal(e.host.perNode, 4 * e.host.perRank);
    assert.equal(e.peak.params + e.peak.optimizer + e.categoryPeaks.grads - term(e, 'grads.unsharded', 'backward'), 0);
  });
});

describe('PyTorch replay on a GPU: allocator, workspaces, context', () => {
  it("counts cuBLAS workspaces (two threads) and cuBLASLt's, and the caching allocator's rounding and reserve", () => {
    const e = estimateMemory(tiny({ device: 'cuda' }));
    assert.equal(
      term(e, 'workspace.cublas', 'forward'),
      (2 * 32 + 1) * 1024 * 1024,
      "Hopper's default without a GPU given",
    );
    assert.ok(e.reservedPeak! >= e.allocatorPeak);
    assert.equal(
      e.peak.total,
      e.reservedPeak! + term(e, 'other.cuda-context', 'forward'),
      'what must fit: the reserved peak and the context',
    );
  });
});
