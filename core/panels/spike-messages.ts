// Messages of the spike view (webview/spikes): a run's loss spikes first, then its grad-norm
// excursions, each with its values rounded, the loss and gradient norm around it, and the usual fixes.
import type { ChartFrame, XAxisFrame } from './chart-messages';
import type { Fix, FixId } from './diagnostics-messages';
import type { PanelReadyMessage } from './panel-protocol';

export interface SpikeEntry {
  step: number;
  metric: 'loss' | 'grad_norm';
  /** One line, values rounded: "loss 2.2× its recent level (3.961 → 8.714)". */
  summary: string;
  /** Label and value pairs, values already rounded for reading. */
  facts: Array<[string, string]>;
  /** What happened to the step, in words. */
  outcome: string;
  /** A marker only (clipping absorbed it), or worth a warning. */
  alert: 'warning' | 'marker';
}

export interface SpikeFrameMessage {
  type: 'spikes';
  run: { target: string; runDir: string; name: string };
  spikes: SpikeEntry[];
  /** Index into spikes of the one shown. */
  selected: number;
  /** Loss and gradient norm around the selected spike, the spike marked. */
  charts: ChartFrame[];
  xAxis: XAxisFrame;
  fixes: Fix[];
}

export type SpikeToWebview = SpikeFrameMessage;
export type SpikeFromWebview = PanelReadyMessage | { type: 'select'; index: number } | { type: 'fix'; id: FixId };

export interface SpikeState {
  target: string;
  runDir: string;
  step?: number;
}
