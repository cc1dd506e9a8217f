// The dashboard's "all scalars" section (webview/run-dashboard/scalar-tags.ts): every scalar tag of
// the run grouped by prefix as TensorBoard groups them; a tag the dashboard draws in one of its own
// charts (loss, learning rate, gradient norm, throughput) says which, the others have a chart of
// their own, downsampled by the host like every chart, drawn only while their group is open.
import type { Points } from '../runs/downsample';

export interface ScalarTagFrame {
  tag: string;
  /** Values logged. */
  count: number;
  lastStep: number;
  /** null when the last value was not finite. */
  lastValue: number | null;
  /** The dashboard chart this tag is drawn in, when it means one of the native metrics. */
  drawnIn?: string;
  /** Its own chart's points (open groups only). */
  points?: Points;
}

export interface ScalarTagGroupFrame {
  /** The prefix before the first `/`; empty for tags without one. */
  group: string;
  tags: ScalarTagFrame[];
}

export interface ScalarTagsFrame {
  groups: ScalarTagGroupFrame[];
  /** Tags whose charts were left out to keep a frame small (open fewer groups to see them). */
  omitted: number;
}

/** The webview says which groups are closed (all are open until closed). */
export interface ScalarTagGroupsMessage {
  type: 'tagGroups';
  closed: string[];
}
