// After a launch of any kind: the run is remembered, followed, and its dashboard opened. Shared by
// "Launch FSDP run" (run configs), launch specs and Resume, so none of them imports another.
import type { LaunchedRun } from '../../runs/launch/launcher';
import { showStartProgress } from '../runs/run-progress';
import type { StudioContext } from '../studio-context';

/** Registers a run just started (or resumed), follows it, and opens its dashboard. */
/** `resumedAt`: for a resume or relaunch in the same folder, when it was asked for (seconds). */
export async function showLaunched(
  studio: StudioContext,
  launched: LaunchedRun,
  facts: { name: string; configPath: string; resumedAt?: number },
): Promise<void> {
  const record = {
    target: launched.target,
    runDir: launched.runDir,
    runId: launched.runId,
    name: facts.name,
    configPath: facts.configPath,
    launchedAt: Date.now(),
    pgid: launched.pgid,
  };
  studio.runs.remember(record);
  const watch = studio.runs.watch(record);
  showStartProgress(watch, record.name);
  // The launch returned once its owner named itself in run.json: the attempt there is the resume's.
  if (facts.resumedAt !== undefined) await watch.followResume(facts.resumedAt, launched.pid);
  studio.dashboards.show(record);
}
