// Messages of the run dashboard (webview/run-dashboard) and the compare view (webview/compare-runs).
// The extension host owns the full history and sends each chart only the points its width can
// show (core/runs/downsample.ts); the webview says which range it looks at.
import type { Points, XRange } from '../runs/downsample';
import type { RunMarker } from '../runs/run-history';
import type { PanelReadyMessage } from './panel-protocol';

export type ChartId = 'loss' | 'lr' | 'grad_norm' | 'tokens_per_s' | 'mfu' | 'memory';

export interface ChartSeries {
  label: string;
  points: Points;
  /** Draw the line across missing points (sparse series such as validation loss). */
  sparse?: boolean;
}

export interface ChartFrame {
  id: ChartId;
  title: string;
  /** How values are shown on the axis: plain numbers, bytes, a rate or a fraction. */
  unit: 'number' | 'bytes' | 'per_s' | 'ratio';
  series: ChartSeries[];
}

export type ConnectionSummary =
  | { state: 'live' | 'connecting' | 'closed' }
  | { state: 'reconnecting'; attempt: number; retryAt: number; reason: string };

export interface DashboardHeader {
  runId: string;
  name: string;
  /** "local" or the SSH host. */
  target: string;
  /** queued, cancelled, timed-out, preempted: runs submitted to SLURM. */
  status: 'queued' | 'starting' | 'running' | 'completed' | 'failed' | 'stopped' | 'cancelled' | 'timed-out' | 'preempted' | 'unknown';
  /** Why it failed or stopped, in words. */
  reason?: string;
  step?: number;
  maxSteps?: number;
  loss?: number | null;
  etaSeconds?: number;
  connection: ConnectionSummary;
  /** Label and value pairs: model, world, strategy, batch, learning rate. */
  summary: Array<[string, string]>;
  /** Lines of metrics.jsonl that could not be read. */
  problems: number;
  anomalies: number;
  canStop: boolean;
  canResume: boolean;
}

export interface DashboardFrameMessage {
  type: 'frame';
  /** The run shown, kept in the webview's state so the panel is restored after a reload. */
  run: { target: string; runDir: string };
  /** Increases with every frame. */
  seq: number;
  header: DashboardHeader;
  charts: ChartFrame[];
  markers: RunMarker[];
  /** The whole run's step range, for the zoom-out button and the scrollbar. */
  extent?: XRange;
  /** Steps stored in the host (before downsampling). */
  totalPoints: number;
  smoothing: number;
}

export type DashboardToWebview = DashboardFrameMessage;

export type DashboardAction = 'stop' | 'resume' | 'openConfig' | 'openFolder' | 'diagnostics';

export type DashboardFromWebview =
  | PanelReadyMessage
  /** The range the charts show (null: follow the whole run) and their width in pixels. */
  | { type: 'view'; range: XRange | null; width: number }
  | { type: 'smoothing'; weight: number }
  | { type: 'action'; action: DashboardAction };

/** Webview state kept across hide/show and reloads (getState/setState). */
export interface DashboardState {
  target: string;
  runDir: string;
  smoothing: number;
  range: XRange | null;
}

// ---- Compare runs ----

export interface CompareRunInfo {
  key: string;
  target: string;
  runDir: string;
  label: string;
  status: DashboardHeader['status'];
}

export interface CompareFrameMessage {
  type: 'compare';
  runs: CompareRunInfo[];
  /** One loss series per run, same order as runs (smoothed when `smoothing` > 0). */
  loss: ChartSeries[];
  smoothing: number;
}

export type CompareToWebview = CompareFrameMessage;
export type CompareFromWebview = PanelReadyMessage | { type: 'view'; range: XRange | null; width: number } | { type: 'smoothing'; weight: number };

export interface CompareState {
  runs: Array<{ target: string; runDir: string }>;
}
