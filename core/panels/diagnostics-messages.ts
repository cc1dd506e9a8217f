// Messages of the NaN diagnostics view (webview/nan-diagnostics): what the run reported about an
// anomaly, what its dump file holds, and the usual fixes with the actions that apply them.
import type { AnomalyEvent } from '../protocol/metrics';
import type { PanelReadyMessage } from './panel-protocol';

/** A table from the dump: per-layer statistics, or the batch. */
export interface DumpTable {
  title: string;
  columns: string[];
  rows: Array<Array<string | number | null>>;
  /** Column drawn as a small bar chart beside the table (e.g. the largest magnitude per layer). */
  chartColumn?: string;
  /** Row index of the layer the anomaly names, highlighted. */
  highlightRow?: number;
}

export type FixId =
  'lower_lr' | 'clip' | 'bf16' | 'check_data' | 'rollback_policy' | 'longer_warmup' | 'skip_spikes' | 'see_loss';

export interface Fix {
  id: FixId;
  title: string;
  /** Why it helps, in one or two sentences. */
  detail: string;
  /** Button text when the fix can be applied to the config from here. */
  action?: string;
}

export interface AnomalyView {
  event: AnomalyEvent;
  /** "NaN in backward, layer 2 (attn.softmax); run stopped". */
  summary: string;
  /** What the stability policy did, in words. */
  policy: string;
  dumpPath?: string;
  tables: DumpTable[];
  /** Why the dump could not be shown, if it could not. */
  dumpError?: string;
  fixes: Fix[];
  /**
   * Set when the entry is a logged scalar that was NaN or Inf (core/runs/nonfinite-scalars.ts), not
   * an anomaly the runtime or fsdp_studio.watch located: its tag, where it was read, and the word
   * for its value ("NaN or Inf" where the writer logged null).
   */
  scalar?: { tag: string; source: string; value: string };
}

export interface DiagnosticsFrameMessage {
  type: 'diagnostics';
  run: { target: string; runDir: string; name: string };
  anomalies: AnomalyView[];
  /** Index into anomalies of the one to show (by default the latest located one, else the latest logged NaN). */
  selected: number;
}

export type DiagnosticsToWebview = DiagnosticsFrameMessage;
export type DiagnosticsFromWebview =
  | PanelReadyMessage
  | { type: 'select'; index: number }
  | { type: 'fix'; id: FixId; index: number }
  | { type: 'openDump'; index: number };

export interface DiagnosticsState {
  target: string;
  runDir: string;
}
