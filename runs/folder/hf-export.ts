// A native run's checkpoints as Hugging Face folders (GPT-2, Llama, Qwen3), for `fsdp-train export --hf` and the runs
// view's "Export checkpoint as Hugging Face model": which checkpoint (a checkpoint folder,
// step-NNNNNNNN with manifest.json, or a run folder's newest complete one) and which model (the
// run's resolved config.json: checkpoints hold the weights, not the model's shape), and the
// runtime's command that writes the folder (fsdp-train-native --export-hf, by argument vector),
// then the tokenizer's files of the folder the run started from (model.from_hf), so that the export
// loads with its tokenizer as the original did. The weights themselves are checked by the runtime
// (native/src/checkpoint/hf_gpt2.cc, hf_decoder.cc).
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { holdsRunManifest } from './run-folder';

export interface ExportSource {
  /** The checkpoint folder (step-NNNNNNNN). */
  checkpoint: string;
  /** The run's resolved config (config.json of its run folder). */
  configFile: string;
}

const STEP_FOLDER = /^step-(\d{8,})$/;

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The run's checkpoints folder, as the runtime resolves checkpointing.dir (relative to the run folder). */
export function checkpointsDirOf(runDir: string, config: { checkpointing?: { dir?: string } }): string {
  return path.resolve(runDir, config.checkpointing?.dir ?? 'checkpoints');
}

/** Complete checkpoints (a step folder with its manifest) under dir, newest first. */
export function listCheckpoints(dir: string): Array<{ step: number; path: string }> {
  if (!isDir(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && STEP_FOLDER.test(e.name) && existsSync(path.join(dir, e.name, 'manifest.json')))
    .map((e) => ({ step: Number(STEP_FOLDER.exec(e.name)![1]), path: path.join(dir, e.name) }))
    .sort((a, b) => b.step - a.step);
}

/** The run folder above a checkpoint: the nearest folder up to three levels above holding config.json and run.json. */
function runFolderAbove(checkpoint: string): string | undefined {
  let dir = path.dirname(checkpoint);
  for (let i = 0; i < 3; i++, dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'config.json')) && holdsRunManifest(dir)) return dir;
  }
  return undefined;
}

/**
 * The checkpoint and config an export reads, from a checkpoint folder or a run folder (its newest
 * checkpoint). `configFile` overrides the run's config.json. Throws an Error saying what is missing.
 */
export function exportSource(target: string, configFile?: string): ExportSource {
  const at = path.resolve(target);
  if (!isDir(at)) throw new Error(`${at}: no such folder (give a checkpoint folder, step-NNNNNNNN, or a run folder)`);
  let checkpoint: string;
  let runDir: string | undefined;
  if (existsSync(path.join(at, 'manifest.json'))) {
    checkpoint = at;
    runDir = runFolderAbove(at);
  } else if (existsSync(path.join(at, 'config.json'))) {
    runDir = at;
    const config = JSON.parse(readFileSync(path.join(at, 'config.json'), 'utf8')) as {
      checkpointing?: { dir?: string };
    };
    const dir = checkpointsDirOf(at, config);
    const newest = listCheckpoints(dir)[0];
    if (!newest) throw new Error(`${at}: the run has no complete checkpoint in ${dir}`);
    checkpoint = newest.path;
  } else {
    throw new Error(`${at}: neither a checkpoint folder (no manifest.json) nor a run folder (no config.json)`);
  }
  const config = configFile ? path.resolve(configFile) : runDir ? path.join(runDir, 'config.json') : undefined;
  if (!config) throw new Error(`${checkpoint}: not inside a run folder: give the run's config with --config`);
  return { checkpoint, configFile: config };
}

/**
 * Runs the runtime's export (`binary --export-hf CONFIG CHECKPOINT OUT`); resolves when out/config.json
 * and out/model.safetensors are written, rejects with the runtime's own words otherwise.
 */
export function exportHuggingFace(binary: string, source: ExportSource, outDir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      ['--export-hf', source.configFile, source.checkpoint, path.resolve(outDir)],
      { maxBuffer: 1 << 20 },
      (error, _stdout, stderr) => {
        if (!error) {
          try {
            copyTokenizerFiles(fromHfOf(source.configFile), outDir);
          } catch (e) {
            return reject(e as Error);
          }
          return resolve();
        }
        const said = stderr.trim().replace(/^fsdp-train-native: /, '');
        reject(new Error(said || error.message));
      },
    );
  });
}

/** A Hugging Face folder's tokenizer files, as save_pretrained of a tokenizer writes them (those present are copied). */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'added_tokens.json',
  'tokenizer.model',
  'vocab.json',
  'merges.txt',
  'chat_template.jinja',
  'generation_config.json',
];

/** model.from_hf of a run's resolved config.json (JSON, the folder absolute), if the run started from a folder. */
export function fromHfOf(resolvedConfigFile: string): string | undefined {
  const config = JSON.parse(readFileSync(resolvedConfigFile, 'utf8')) as { model?: { from_hf?: unknown } };
  return typeof config.model?.from_hf === 'string' ? config.model.from_hf : undefined;
}

/**
 * Copies the tokenizer files of `from` (the folder the run's model came from, model.from_hf) into
 * outDir; returns the names copied (none without a folder). A link is followed (the Hugging Face
 * cache links its snapshots' files) to a regular file only.
 */
export function copyTokenizerFiles(from: string | undefined, outDir: string): string[] {
  if (from === undefined || !isDir(from)) return [];
  const copied: string[] = [];
  for (const name of TOKENIZER_FILES) {
    const src = path.join(from, name);
    let isFile: boolean;
    try {
      isFile = statSync(src).isFile();
    } catch {
      continue;
    }
    if (!isFile) throw new Error(`${src}: not a regular file, not copied as the tokenizer's`);
    copyFileSync(src, path.join(path.resolve(outDir), name));
    copied.push(name);
  }
  return copied;
}
