// What a framework's memory model hands to the estimator: its terms, each with the bytes live at
// the end of forward, during backward (as a function of how far backward has got) and at the
// optimizer step.
import type { MemoryCategory } from '../memory-estimate';

export interface TermSpec {
  id: string;
  category: MemoryCategory;
  label: string;
  where: 'device' | 'host';
  outsideAllocator?: boolean;
  forward: number;
  /**
   * Bytes during backward at `step`: step 0 is the loss and LM head, step j (1…n_layers) is the
   * backward of block n_layers − j. A number means the same at every step.
   */
  backward: number | ((step: number) => number);
  optimizer: number;
}

export interface FrameworkTerms {
  terms: TermSpec[];
  /** Backward steps to examine: n_layers + 1. */
  backwardSteps: number;
  /** Caching-allocator fragmentation as a fraction of allocated bytes (0 for exact plans). */
  fragmentation: number;
  notes: string[];
}

/** A term with the same bytes in every phase. */
export function constantTerm(id: string, category: MemoryCategory, label: string, bytes: number, where: 'device' | 'host' = 'device'): TermSpec {
  return { id, category, label, where, forward: bytes, backward: bytes, optimizer: bytes };
}
