// MFU's peak as a run states it (run_start's peak_flops, peak_source and peak_measured; a step
// event's peak_flops when the runtime raised it: native/src/backend/peak_flops.h), and MFU never
// shown above 100%: a value above it (a run recorded before the runtime raised its peak, or a
// person's own trainer) is shown at 100% and counted, so the chart says that the peak was too low.
import type { RunStartEvent, StepEvent } from '../protocol/metrics';
import { formatFlops } from './number-format';

export interface MfuPeakInfo {
  flops: number;
  /** Where it comes from, in the runtime's words. */
  source?: string;
  /** When it was measured (epoch seconds); absent for a datasheet's or a given peak. */
  measured?: number;
  /** The last time the run raised it: at which step, from what. */
  raised?: { step: number; from: number };
}

export class MfuPeak {
  private info: MfuPeakInfo | undefined;
  private above = 0;
  private highestAbove = 0;

  get current(): MfuPeakInfo | undefined {
    return this.info;
  }

  /** Steps whose MFU was above 1, and the highest of them. */
  get capped(): { steps: number; highest: number } {
    return { steps: this.above, highest: this.highestAbove };
  }

  onRunStart(e: RunStartEvent): void {
    this.info = e.peak_flops
      ? {
          flops: e.peak_flops,
          ...(e.peak_source ? { source: e.peak_source } : {}),
          ...(e.peak_measured ? { measured: e.peak_measured } : {}),
        }
      : undefined;
  }

  onStep(e: StepEvent): void {
    if (e.peak_flops !== undefined && this.info && e.peak_flops !== this.info.flops)
      this.info = { ...this.info, flops: e.peak_flops, raised: { step: e.step, from: this.info.flops } };
  }

  /** The MFU to show: at most 1. */
  cap(mfu: number): number {
    if (mfu <= 1) return mfu;
    this.above++;
    this.highestAbove = Math.max(this.highestAbove, mfu);
    return 1;
  }

  /** The chart's note and tooltip: the peak, where it comes from, when it was measured, what raised it, what was capped. */
  describe(): { note: string; tooltip: string } | undefined {
    const p = this.info;
    if (!p) return undefined;
    const when = p.measured
      ? `, measured ${new Date(p.measured * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`
      : '';
    const raised = p.raised
      ? `; raised at step ${p.raised.step} from ${formatFlops(p.raised.from)}: this run went faster than the peak it had`
      : '';
    const capped = this.above
      ? `; ${this.above} step${this.above === 1 ? '' : 's'} measured above it (up to ${(this.highestAbove * 100).toFixed(0)}%) shown at 100%: that peak is below what this device does`
      : '';
    const source = p.source ? ` (${p.source})` : '';
    return {
      note: `of ${formatFlops(p.flops)} per rank${source}${when}${raised}${capped}`,
      tooltip: `Model FLOPs utilisation: the model's FLOPs per second on one rank divided by the peak FLOP/s of its device, ${formatFlops(p.flops)}${p.source ? `, from ${p.source}` : ''}${when}. On a CPU the peak is the best this machine's BLAS has reached with these kernels and threads; a step that goes faster raises it, so MFU is never above 100%.`,
    };
  }
}
