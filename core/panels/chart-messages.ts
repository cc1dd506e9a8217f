// What a chart receives from the extension host, shared by the run dashboard, the compare view and
// the spike view: series already downsampled to the chart's width (core/runs/downsample.ts), in
// the units of the x axis the person chose.
import type { Points } from '../runs/downsample';
import type { MfuPeakInfo } from '../runs/mfu-peak';
import type { XAxisMode } from '../runs/x-axis';

/** Built-in charts; other sections (e.g. scalar tags of other trainers) use their own ids. */
export type ChartId = 'loss' | 'lr' | 'grad_norm' | 'tokens_per_s' | 'mfu' | 'memory' | (string & {});

export interface ChartSeries {
  label: string;
  points: Points;
  /** Draw the line across missing points (sparse series such as validation loss). */
  sparse?: boolean;
  /**
   * raw: the measured values, drawn faint when a smoothed line goes with them; smoothed: their EMA;
   * reference: a planned value, dashed (the memory plan). Absent: a plain line.
   */
  role?: 'raw' | 'smoothed' | 'reference';
  /** Same colour as the series of this label (a smoothed line with its raw one). */
  colourOf?: string;
}

export interface ChartFrame {
  id: ChartId;
  title: string;
  /** How values are shown on the axis: plain numbers, bytes, a rate or a fraction. */
  unit: 'number' | 'bytes' | 'per_s' | 'ratio';
  series: ChartSeries[];
  /** One line under the title (and its tooltip): what the values are measured against. */
  note?: string;
  /** Longer explanation shown as the chart's tooltip. */
  tooltip?: string;
  /** Vertical markers this chart draws. */
  markers?: ChartMarker[];
  /** The MFU chart: the peak it is measured against, when it was measured, and what raised it. */
  peak?: MfuPeakInfo;
  /** Shown in place of the plot while it has no points: why it is empty. */
  empty?: string;
}

/** A chart marker placed on the x axis: a checkpoint, a skipped step, a spike, a NaN. */
export interface ChartMarker {
  x: number;
  step: number;
  kind: 'checkpoint' | 'skipped' | 'spike' | 'clipped' | 'nan' | 'inf';
  /** One line for a tooltip. */
  label: string;
}

/** The x axis and how its values read. */
export interface XAxisFrame {
  mode: XAxisMode;
  /** Elapsed mode: the run's start (epoch seconds) that x = 0 stands for. */
  origin?: number;
}
