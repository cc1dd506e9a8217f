// Every launch from the editor, whatever runs and wherever: through runs/launch/launch-run.ts's one
// door, with a progress notification, the failure said where it belongs, and the run registered,
// followed and its dashboard opened (a SLURM job: with the submission's notice and its batch script).
import path from 'node:path';
import * as vscode from 'vscode';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { launchRun, launchTargetOf, type Launched, type RunSpec } from '../../runs/launch/launch-run';
import { runWorld, worldSizeOf } from '../../runs/launch/mpirun';
import { LOCAL } from '../../runs/machines/run-machine';
import type { LaunchedSlurmRun } from '../../runs/slurm/slurm-launch';
import type { RunRecord } from '../../runs/watch/run-registry';
import { launchEnvironment } from '../runs/launch-environment';
import type { StudioContext } from '../studio-context';
import { showLaunchFailure } from './launch-problems';
import { showLaunched } from './show-launched';
import { showBatchScript } from './slurm-runs';

/** Starts (or, with `previous`, resumes) a run; undefined when it could not be started (already said). */
export async function startLaunch(
  studio: StudioContext,
  spec: RunSpec,
  opts: { note?: string; previous?: RunManifest } = {},
): Promise<Launched | undefined> {
  const target = launchTargetOf(spec, opts.previous);
  const file = spec.kind === 'native' ? spec.request.configPath : spec.request.specPath;
  const where = spec.kind === 'native' ? (spec.request.config.launch.target ?? LOCAL) : spec.request.spec.target;
  const resumed = spec.request.resumeRunDir !== undefined;
  const rel = vscode.workspace.asRelativePath(file);
  const verb = target.kind === 'slurm' ? (resumed ? 'Resubmitting' : 'Submitting') : resumed ? 'Resuming' : 'Launching';
  const title = `${verb} ${rel}${target.kind === 'slurm' ? ' to SLURM' : ''}${where === LOCAL ? '' : ` on ${where}`}`;
  const askedAt = Date.now() / 1000;
  let launched: Launched;
  try {
    launched = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title },
      (progress) => {
        const report = (message: string) => {
          progress.report({ message });
          studio.output.info(`${where}: ${message}`);
        };
        if (opts.note) report(opts.note);
        return launchRun(spec, target, launchEnvironment(studio), {
          progress: report,
          ...(opts.previous ? { previous: opts.previous } : {}),
        });
      },
    );
  } catch (e) {
    const message = `${verb} ${rel} failed: ${(e as Error).message}`;
    studio.output.error(message);
    // A run config's failure may name one of its keys: shown there.
    if (spec.kind === 'native' && target.kind !== 'slurm')
      void showLaunchFailure(studio.output, vscode.Uri.file(file), message);
    else void vscode.window.showErrorMessage(message);
    return undefined;
  }
  const name = spec.kind === 'native' ? spec.request.config.name : spec.request.spec.name;
  if ('jobId' in launched) {
    await showSubmitted(studio, launched, { name: name ?? path.basename(file), configPath: file, resumed });
    return launched;
  }
  const processes = spec.kind === 'native' ? `, ${worldSizeOf(runWorld(spec.request.config))} process(es)` : '';
  studio.output.info(
    `${verb.toLowerCase()} ${launched.runId} on ${launched.target}: pid ${launched.pid}${processes}: ${launched.argv.join(' ')}`,
  );
  await showLaunched(studio, launched, {
    name: name ?? launched.runId,
    configPath: file,
    ...(resumed ? { resumedAt: askedAt } : {}),
  });
  return launched;
}

/** A job just submitted: registered, followed, its dashboard open, and a notice that shows its batch script. */
async function showSubmitted(
  studio: StudioContext,
  launched: LaunchedSlurmRun,
  run: { name: string; configPath: string; resumed: boolean },
): Promise<void> {
  studio.output.info(
    `submitted ${launched.runId} as job ${launched.jobId} on ${launched.target}: ${launched.argv.join(' ')}`,
  );
  const record: RunRecord = {
    target: launched.target,
    runDir: launched.runDir,
    runId: launched.runId,
    name: run.name,
    configPath: run.configPath,
    launchedAt: Date.now(),
  };
  studio.runs.remember(record);
  const watch = studio.runs.watch(record);
  if (run.resumed) {
    await watch.refreshJob();
    watch.follow();
  }
  studio.dashboards.show(record);
  void vscode.window
    .showInformationMessage(
      `${run.name}: job ${launched.jobId} submitted${launched.target === LOCAL ? '' : ` on ${launched.target}`}.`,
      'Show batch script',
    )
    .then((pick) => {
      if (pick) void showBatchScript(studio, record, launched.script);
    });
}
