// Messages of the "Memory estimator" panel. The extension host reads the config and sends its
// estimate input; the webview runs the (pure, fast) estimator itself on every control change, so
// it redraws within one animation frame, and asks the host to apply a change to the config.
import type { ConfigKind } from '../memory/inputs/config-input';
import type { ModelOrigin } from '../memory/inputs/model-from-options';
import type { MemoryChange } from '../memory/memory-change';
import type { MemoryInput } from '../memory/memory-input';
import type { PanelReadyMessage } from './panel-protocol';

/** The config as it is now in the editor (sent on ready and after every edit of the document). */
export interface EstimatorConfigMessage {
  type: 'config';
  /** Shown in the panel's title line. */
  fileName: string;
  kind: ConfigKind;
  input: MemoryInput;
  /** Assumptions the reading made. */
  notes: string[];
  /** Which model the estimate is for and where it came from (a preset, a config.json, the config's model section). */
  model?: ModelOrigin;
  /** This machine's memory, the target of CPU runs of our runtime when no GPU is named. */
  hostMemoryBytes: number;
}

/** The config cannot be estimated as it stands (syntax or schema error), with where and why. */
export interface EstimatorConfigErrorMessage {
  type: 'configError';
  fileName: string;
  error: string;
}

/** The outcome of an apply request. */
export interface EstimatorAppliedMessage {
  type: 'applied';
  ok: boolean;
  message: string;
}

export type MemoryEstimatorToWebview = EstimatorConfigMessage | EstimatorConfigErrorMessage | EstimatorAppliedMessage;

/** Write this change into the config (a WorkspaceEdit at the exact range). */
export interface ApplyChangeMessage {
  type: 'apply';
  change: MemoryChange;
}

export type MemoryEstimatorFromWebview = PanelReadyMessage | ApplyChangeMessage;
