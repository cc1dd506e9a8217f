// Messages of the run dashboard (webview/run-dashboard). The extension host owns the full history
// and sends each chart only the points its width can show (core/runs/downsample.ts); the webview
// says which range it looks at, on which x axis.
import type { XRange } from '../runs/downsample';
import type { XAxisMode } from '../runs/x-axis';
import type { ChartFrame, ChartId, XAxisFrame } from './chart-messages';
import type { PanelReadyMessage } from './panel-protocol';
import type { ScalarTagGroupsMessage, ScalarTagsFrame } from './scalar-tags-messages';

export type { ChartFrame, ChartId, ChartMarker, ChartSeries, XAxisFrame } from './chart-messages';

export type ConnectionSummary =
  | { state: 'live' | 'connecting' | 'closed' }
  | { state: 'reconnecting'; attempt: number; retryAt: number; reason: string };

export interface DashboardHeader {
  runId: string;
  name: string;
  /** "local" or the SSH host. */
  target: string;
  /** What runs: the native runtime, a person's own command (a launch spec), or a TensorBoard folder attached. */
  runKind: 'native' | 'command' | 'tensorboard';
  /** queued, cancelled, timed-out, preempted: runs submitted to SLURM. */
  status:
    | 'queued'
    | 'starting'
    | 'running'
    | 'completed'
    | 'failed'
    | 'stopped'
    | 'cancelled'
    | 'timed-out'
    | 'preempted'
    | 'unknown';
  /** Why it failed or stopped, in words. */
  reason?: string;
  step?: number;
  maxSteps?: number;
  loss?: number | null;
  etaSeconds?: number;
  /** When the run began (its first run_start, else its manifest), and ended, in epoch seconds: the header counts elapsed time from these. */
  startedAt?: number;
  endedAt?: number;
  /**
   * Time the run has been running: `activeBefore` seconds in its starts that ended, plus, while a
   * start runs, the time since `runningSince` (epoch seconds). The idle time between a stop and a
   * resume or "Continue training" is not in it.
   */
  activeBefore?: number;
  runningSince?: number;
  /** Training tokens consumed so far, all ranks together. */
  tokensSeen?: number;
  /** A long operation under way with nothing new on the charts: start-up, the first step, a checkpoint save. */
  phase?: RunPhase;
  connection: ConnectionSummary;
  /**
   * A metric has been NaN or Inf since this step (to its last): a "completed" run that is not a
   * success. Usually the loss; the gradient norm where the loss is finite (the HF Trainer's
   * logging_nan_inf_filter logs a stand-in loss), or any other tag.
   */
  nanSince?: number;
  /** What nanSince is, in words: "loss NaN since step 2", "the loss is hidden by logging_nan_inf_filter; …". */
  nanText?: string;
  /** A person's command with no metrics read: what is read, and what to add so there are some. */
  metricsNote?: string;
  /** Label and value pairs: model, world, strategy, batch, learning rate. */
  summary: Array<[string, string]>;
  /** Lines of metrics.jsonl that could not be read. */
  problems: number;
  /** NaN and Inf reports (the NaN diagnostics view). */
  anomalies: number;
  /** Loss spikes and grad-norm excursions (the spike view), and how many of them are loss spikes. */
  spikes: number;
  lossSpikes: number;
  canStop: boolean;
  canResume: boolean;
}

export interface RunPhase {
  /** "Starting the trainer", "Running the first step", "Saving the checkpoint of step 500". */
  label: string;
  /** What is known beside it, e.g. "model and data ready, 124M parameters". */
  detail?: string;
  /** When it began (epoch seconds): the header counts the seconds. */
  since: number;
}

export interface DashboardFrameMessage {
  type: 'frame';
  /** The run shown, kept in the webview's state so the panel is restored after a reload. */
  run: { target: string; runDir: string };
  /** Increases with every frame. */
  seq: number;
  header: DashboardHeader;
  charts: ChartFrame[];
  xAxis: XAxisFrame;
  /** The whole run's x range, for the zoom-out button. */
  extent?: XRange;
  /** Steps stored in the host (before downsampling). */
  totalPoints: number;
  smoothing: number;
  /** Every scalar tag, grouped by prefix (webview/run-dashboard/scalar-tags.ts). */
  tags?: ScalarTagsFrame;
}

export type DashboardToWebview =
  | DashboardFrameMessage
  /** Output of the run's processes, appended (reset: replaces what is shown, e.g. the tail on first open). */
  | { type: 'log'; stream: LogStream; text: string; reset?: boolean; note?: string };

export type LogStream = 'stdout' | 'stderr';

export type DashboardAction = 'stop' | 'resume' | 'openConfig' | 'openFolder' | 'diagnostics' | 'spikes';

export type DashboardFromWebview =
  | PanelReadyMessage
  /** The range the charts show (null: follow the whole run), in the units of `xAxis`, and their width in pixels. */
  | { type: 'view'; range: XRange | null; width: number; xAxis: XAxisMode }
  | { type: 'smoothing'; weight: number }
  | { type: 'action'; action: DashboardAction }
  /** Save every metric of the run as CSV (the host asks where). */
  | { type: 'exportCsv' }
  /** Save a chart as PNG: the chart drawn by the webview, as a data: URL (the host asks where). */
  | { type: 'exportPng'; chart: ChartId; title: string; dataUrl: string }
  /** The log tab is shown (follow) or hidden. */
  | { type: 'logs'; follow: boolean }
  | ScalarTagGroupsMessage;

/** Per-chart choices of the person: log y axis, outliers left out of the y range. */
export interface ChartOptions {
  log?: boolean;
  clip?: boolean;
}

/** Webview state kept across hide/show and reloads (getState/setState). */
export interface DashboardState {
  target: string;
  runDir: string;
  smoothing: number;
  range: XRange | null;
  xAxis?: XAxisMode;
  charts?: Record<string, ChartOptions>;
  tab?: 'charts' | 'log';
  /** Scalar tag groups the person closed. */
  closedTagGroups?: string[];
}
