// Finding a Hugging Face model's config.json on this machine, never over the network: a path (a
// model folder or its config.json, relative to the config being estimated), or a model id looked up
// in the local Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub,
// laid out as models--ORG--NAME/snapshots/<commit>/config.json with refs/main naming the commit).
// Also the model a config or a training script beside it names (model_name_or_path, base_model,
// from_pretrained("…")), for configs that do not say which model they train.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { shapeFromHfConfig } from '../hf-config';
import { parameterCounts } from '../model-shape';
import { formatParameters } from '../summary';
import type { ModelChoice, ModelSource } from './model-from-options';

export interface HfLookup {
  /** Folder of the config being estimated (relative paths are resolved from it). */
  baseDir?: string;
  env?: NodeJS.ProcessEnv;
  home?: string;
}

/** The Hugging Face hub cache folder, as huggingface_hub resolves it. */
export function hfCacheDir(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return path.join(env.HF_HOME, 'hub');
  return path.join(env.XDG_CACHE_HOME ?? path.join(home, '.cache'), 'huggingface', 'hub');
}

/** A model source for config readers: Hugging Face models by path or cache, and models named beside the config. */
export function hfModelSource(configFile: string | undefined, lookup: HfLookup = {}): ModelSource {
  const baseDir = lookup.baseDir ?? (configFile ? path.dirname(configFile) : undefined);
  const where = { ...lookup, baseDir };
  return {
    resolve: (ref) => findHfModel(ref, where),
    named: () => (configFile ? namedModel(configFile) : undefined),
    readFile: readSmallFile,
  };
}

/** A regular file of at most 1 MiB (a DeepSpeed config is a few KB), else undefined: never a FIFO or a device. */
function readSmallFile(file: string): string | undefined {
  try {
    const s = statSync(file);
    return s.isFile() && s.size <= 1 << 20 ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** The model `ref` names: a path or a cached model id; undefined when it is neither. */
export function findHfModel(ref: string, lookup: HfLookup = {}): ModelChoice | undefined {
  const home = lookup.home ?? os.homedir();
  const asPath = ref.startsWith('~')
    ? path.join(home, ref.slice(1))
    : path.isAbsolute(ref)
      ? ref
      : lookup.baseDir
        ? path.join(lookup.baseDir, ref)
        : undefined;
  if (asPath && existsSync(asPath)) {
    const file = statSync(asPath).isDirectory() ? path.join(asPath, 'config.json') : asPath;
    if (!existsSync(file)) return { error: `${asPath} has no config.json` };
    return readHfConfig(
      file,
      path.basename(statSync(asPath).isDirectory() ? asPath : path.dirname(asPath)),
      `from ${file}`,
    );
  }
  if (!/^[\w.-]+(\/[\w.-]+)?$/.test(ref)) return undefined;
  const cache = hfCacheDir(lookup.env, home);
  const repo = path.join(cache, `models--${ref.replace('/', '--')}`);
  const file = snapshotConfig(repo);
  if (!file) return undefined;
  return readHfConfig(file, ref, `from the Hugging Face cache (${file})`);
}

/** config.json of the snapshot refs/main points at, else of the newest snapshot that has one. */
function snapshotConfig(repo: string): string | undefined {
  const snapshots = path.join(repo, 'snapshots');
  if (!existsSync(snapshots)) return undefined;
  const main = path.join(repo, 'refs', 'main');
  if (existsSync(main)) {
    const file = path.join(snapshots, readFileSync(main, 'utf8').trim(), 'config.json');
    if (existsSync(file)) return file;
  }
  const candidates = readdirSync(snapshots)
    .map((d) => path.join(snapshots, d, 'config.json'))
    .filter((f) => existsSync(f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return candidates[0];
}

function readHfConfig(file: string, name: string, from: string): ModelChoice {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    return { error: `${file}: ${(e as Error).message}` };
  }
  const model = shapeFromHfConfig(json, name);
  if ('error' in model) return { error: `${file}: ${model.error}` };
  const params = formatParameters(parameterCounts(model.shape).total);
  return {
    shape: model.shape,
    seqLen: model.seqLen,
    note: `model: ${name} (${model.family}, ${params} parameters) ${from}`,
    source: { name, from: file, parameters: parameterCounts(model.shape).total },
  };
}

const KEYS = ['model_name_or_path', 'pretrained_model_name_or_path', 'base_model', 'model_id'];
const SCRIPT_EXTENSIONS = new Set(['.sh', '.py', '.yaml', '.yml', '.json', '.toml', '.cfg']);
const MAX_SCRIPT_BYTES = 256 * 1024;

/** The model the config itself or a script beside it names, with where it is named ("train.sh:12"). */
export function namedModel(configFile: string): { ref: string; where: string } | undefined {
  const own = readSmall(configFile);
  const inOwn = own !== undefined ? findModelName(own) : undefined;
  if (inOwn) return { ref: inOwn.ref, where: `${path.basename(configFile)}:${inOwn.line}` };
  const dir = path.dirname(configFile);
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return undefined;
  }
  for (const name of names) {
    const file = path.join(dir, name);
    if (file === configFile || !SCRIPT_EXTENSIONS.has(path.extname(name))) continue;
    const text = readSmall(file);
    const found = text !== undefined ? findModelName(text) : undefined;
    if (found) return { ref: found.ref, where: `${name}:${found.line}` };
  }
  return undefined;
}

function readSmall(file: string): string | undefined {
  try {
    const st = statSync(file);
    return st.isFile() && st.size <= MAX_SCRIPT_BYTES ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** `--model_name_or_path X`, `model_name_or_path: X`, `"model_name_or_path": "X"`, `from_pretrained("X")`. */
export function findModelName(text: string): { ref: string; line: number } | undefined {
  const patterns = [
    new RegExp(`--(?:${KEYS.join('|')})[= ]+["']?([^\\s"'\\\\]+)`),
    new RegExp(`^\\s*["']?(?:${KEYS.join('|')})["']?\\s*[:=]\\s*["']?([^\\s"',#]+)`, 'm'),
    /from_pretrained\(\s*["']([^"']+)["']/,
  ];
  for (const re of patterns) {
    const m = re.exec(text);
    if (m && m[1] && !m[1].startsWith('$')) return { ref: m[1], line: text.slice(0, m.index).split('\n').length };
  }
  return undefined;
}
