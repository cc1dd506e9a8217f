// Messages of the compare view (webview/compare-runs): one chart per metric with a line per run,
// and the config values that differ between the runs.
import type { XRange } from '../runs/downsample';
import type { ConfigDifference } from '../runs/config-diff';
import type { XAxisMode } from '../runs/x-axis';
import type { ChartFrame, XAxisFrame } from './chart-messages';
import type { ChartOptions, DashboardHeader } from './dashboard-messages';
import type { PanelReadyMessage } from './panel-protocol';

export interface CompareRunInfo {
  key: string;
  target: string;
  runDir: string;
  label: string;
  status: DashboardHeader['status'];
  /** Last step and loss, for the runs list. */
  step?: number;
  loss?: number | null;
}

export interface CompareFrameMessage {
  type: 'compare';
  runs: CompareRunInfo[];
  /** Loss, validation loss, learning rate, gradient norm, throughput: each with one series per run, in the runs' order. */
  charts: ChartFrame[];
  xAxis: XAxisFrame;
  /** Config keys whose values differ between the runs. */
  configDiff: ConfigDifference[];
  smoothing: number;
}

export type CompareToWebview = CompareFrameMessage;
export type CompareFromWebview =
  | PanelReadyMessage
  | { type: 'view'; range: XRange | null; width: number; xAxis: XAxisMode }
  | { type: 'smoothing'; weight: number }
  | { type: 'exportPng'; chart: string; title: string; dataUrl: string };

export interface CompareState {
  runs: Array<{ target: string; runDir: string }>;
  smoothing?: number;
  xAxis?: XAxisMode;
  charts?: Record<string, ChartOptions>;
}
