// "FSDP: Export checkpoint as Hugging Face model": a checkpoint of a native run on this machine (any
// world size; the newest unless the person picks another) written as a Hugging Face folder of the
// run's architecture (GPT-2, Llama, Qwen3) — config.json and model.safetensors, with the tokenizer
// files of the folder the run started from — that transformers loads with from_pretrained. The runtime
// writes it (fsdp-train-native --export-hf, runs/folder/hf-export.ts), so the files are checked
// as a resume checks them.
import * as vscode from 'vscode';
import { checkpointsDirOf, exportHuggingFace, listCheckpoints } from '../../runs/folder/hf-export';
import type { StudioContext } from '../studio-context';
import { runTitle } from '../views/run-labels';
import { requireTrust } from './launch-run';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerExportHf(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.exportHuggingFace', (arg?: RunArgument) => exportHf(studio, arg));
}

async function exportHf(studio: StudioContext, arg: RunArgument): Promise<void> {
  if (!requireTrust('Exporting a checkpoint runs the native runtime')) return;
  const runs = studio.runs;
  const record = await runFromArgument(runs, arg, {
    title: 'Export checkpoint as Hugging Face model',
    filter: (r) => r.target === 'local',
    none: 'No runs on this machine to export.',
  });
  if (!record) return;
  const watch = runs.watch(record);
  await watch.refreshManifest();
  const title = runTitle(record, watch);
  if (record.target !== 'local') {
    void vscode.window.showErrorMessage(
      `${title} runs on ${record.target}: export its checkpoints there with \`npx fsdp-train export RUN_DIR --hf OUT_DIR\`.`,
    );
    return;
  }
  if (watch.manifest?.kind === 'command') {
    void vscode.window.showErrorMessage(
      `${title} is your own training command: its checkpoints are its own, not the native runtime's.`,
    );
    return;
  }
  const config = (watch.manifest?.config ?? {}) as { checkpointing?: { dir?: string } };
  const checkpoints = listCheckpoints(checkpointsDirOf(record.runDir, config));
  if (checkpoints.length === 0) {
    void vscode.window.showErrorMessage(`${title} has no complete checkpoint yet (checkpointing.dir of its config).`);
    return;
  }
  const picked =
    checkpoints.length === 1
      ? checkpoints[0]
      : (
          await vscode.window.showQuickPick(
            checkpoints.map((c, i) => ({
              label: `step ${c.step}`,
              description: i === 0 ? 'newest' : undefined,
              detail: c.path,
              checkpoint: c,
            })),
            { title: `Export a checkpoint of ${title}` },
          )
        )?.checkpoint;
  if (!picked) return;
  const target = await vscode.window.showSaveDialog({
    title: `Hugging Face folder for step ${picked.step} of ${title}`,
    defaultUri: vscode.Uri.file(`${record.runDir}/hf-step-${picked.step}`),
    saveLabel: 'Export here',
  });
  if (!target) return;
  try {
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Exporting step ${picked.step} of ${title}…` },
      async (progress) => {
        await studio.localRuntime.ensure((message) => progress.report({ message }));
        await exportHuggingFace(
          studio.localRuntime.binary,
          { checkpoint: picked.path, configFile: `${record.runDir}/config.json` },
          target.fsPath,
        );
      },
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot export step ${picked.step} of ${title}: ${(e as Error).message}`);
    return;
  }
  studio.output.info(`exported ${picked.path} as a Hugging Face model in ${target.fsPath}`);
  const open = await vscode.window.showInformationMessage(
    `Exported step ${picked.step} of ${title} as a Hugging Face model: ${target.fsPath}`,
    'Reveal folder',
  );
  if (open) void vscode.commands.executeCommand('revealFileInOS', target);
}
