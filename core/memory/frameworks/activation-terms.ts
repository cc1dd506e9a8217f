// Turns per-block activation sizes into phase terms under a checkpointing policy. Backward runs
// the blocks in reverse: block i's saved tensors are live until its own backward finishes, and a
// checkpointed block first recomputes its activations, so its full set is live again briefly.
import type { MemoryInput } from '../memory-input';
import type { TermSpec } from './term-spec';

/** Activation bytes of one micro-batch for a model, independent of the checkpointing policy. */
export interface BlockActivations {
  /** Saved by one block with no checkpointing. */
  fullBlock: number;
  /** Saved by one block under selective checkpointing. */
  selectiveBlock: number;
  /** Kept by a checkpointed block: its input. */
  blockInput: number;
  /** Extra while one block runs its backward (gradients of its activations). */
  backwardTransient: number;
  /** Saved outside the blocks (final norm, head input, embedding). */
  outsideBlocks: number;
  logits: {
    /** Peak of the loss computation at the end of forward. */
    forward: number;
    /** Peak of the loss's backward, the first step of backward. */
    backwardStart: number;
    /** What stays live for the rest of backward. */
    kept: number;
  };
}

/** Whether block i (0-based) is checkpointed: every_n checkpoints blocks n-1, 2n-1, … (torchtitan's ac_freq). */
function isCheckpointed(input: MemoryInput, block: number): boolean {
  const c = input.checkpointing;
  return c.policy === 'every_n' && (block + 1) % c.everyN === 0;
}

function savedByBlock(input: MemoryInput, acts: BlockActivations, block: number): number {
  if (input.checkpointing.policy === 'selective') return acts.selectiveBlock;
  return isCheckpointed(input, block) ? acts.blockInput : acts.fullBlock;
}

/** Activation terms: the blocks' saved tensors, the backward transient, and the logits. */
export function activationTerms(input: MemoryInput, acts: BlockActivations): TermSpec[] {
  const L = input.model.nLayers;
  const saved: number[] = [];
  for (let i = 0; i < L; i++) saved.push(savedByBlock(input, acts, i));
  // savedUpTo[i] = bytes saved by blocks 0..i-1
  const savedUpTo = [0];
  for (let i = 0; i < L; i++) savedUpTo.push(savedUpTo[i] + saved[i]);
  const total = savedUpTo[L];
  const blockAt = (step: number) => L - step;
  const recomputed = (block: number): number => {
    if (input.checkpointing.policy === 'selective') return acts.fullBlock - acts.selectiveBlock;
    return isCheckpointed(input, block) ? acts.fullBlock - acts.blockInput : 0;
  };
  return [
    {
      id: 'activations.blocks',
      category: 'activations',
      label: `tensors saved for backward by ${L} blocks`,
      where: 'device',
      forward: total + acts.outsideBlocks,
      // At step j, blocks 0 … L−j are still live (the one in backward included).
      backward: (step) => (step === 0 ? total : savedUpTo[blockAt(step) + 1]) + acts.outsideBlocks,
      optimizer: 0,
    },
    {
      id: 'activations.recompute',
      category: 'activations',
      label: "a block's activations recomputed for its backward, and the gradients of its activations",
      where: 'device',
      forward: 0,
      backward: (step) => (step === 0 ? 0 : recomputed(blockAt(step)) + acts.backwardTransient),
      optimizer: 0,
    },
    {
      id: 'activations.logits',
      category: 'activations',
      label: 'logits and the cross-entropy peak',
      where: 'device',
      forward: acts.logits.forward,
      backward: (step) => (step === 0 ? acts.logits.backwardStart : acts.logits.kept),
      optimizer: 0,
    },
  ];
}
