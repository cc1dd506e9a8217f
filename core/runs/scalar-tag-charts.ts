// What the dashboard's "all scalars" section shows for a view: every tag with a value, grouped by
// prefix in the order tags first appeared; its own chart's points (downsampled to the view like
// every chart) unless the dashboard draws it already or its group is closed.
import type { ScalarTagFrame, ScalarTagsFrame } from '../panels/scalar-tags-messages';
import { downsampleToView, type XRange } from './downsample';
import type { RunHistory } from './run-history';
import { tagGroup, type RecognisedMetric } from './scalar-tags';

/** Tag charts in one frame at most; the rest are listed with their last value. */
export const MAX_TAG_CHARTS = 48;

/** The dashboard chart each recognised metric is drawn in. */
const DRAWN_IN: Record<RecognisedMetric, string> = {
  loss: 'Loss',
  val_loss: 'Loss',
  lr: 'Learning rate',
  grad_norm: 'Gradient norm',
  tokens_per_s: 'Throughput',
  mfu: 'MFU',
  step_ms: '',
};

export function buildScalarTags(
  history: RunHistory,
  view: { range: XRange | null; width: number },
  closed: ReadonlySet<string>,
): ScalarTagsFrame {
  const drawn = new Map<string, string>();
  for (const metric of Object.keys(DRAWN_IN) as RecognisedMetric[]) {
    const tag = history.tagOf(metric);
    if (tag && DRAWN_IN[metric]) drawn.set(tag, DRAWN_IN[metric]);
  }
  const groups = new Map<string, ScalarTagFrame[]>();
  const width = Math.max(50, Math.min(8192, Math.round(view.width)));
  let charts = 0;
  let omitted = 0;
  for (const tag of history.scalars.tags()) {
    const series = history.scalars.get(tag)!;
    const values = series.values;
    if (values.length === 0) continue;
    const group = tagGroup(tag);
    const last = values.lastValue!;
    const frame: ScalarTagFrame = {
      tag,
      count: values.length,
      lastStep: values.lastStep!,
      lastValue: Number.isFinite(last) ? last : null,
    };
    const drawnIn = drawn.get(tag);
    if (drawnIn) frame.drawnIn = drawnIn;
    else if (!closed.has(group)) {
      if (charts < MAX_TAG_CHARTS) {
        frame.points = downsampleToView(values.steps, values.values, view.range ?? undefined, width);
        charts++;
      } else omitted++;
    }
    const list = groups.get(group) ?? [];
    list.push(frame);
    groups.set(group, list);
  }
  return { groups: [...groups].map(([group, tags]) => ({ group, tags })), omitted };
}
