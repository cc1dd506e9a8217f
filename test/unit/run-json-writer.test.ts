// One writer of run.json (issue 25): every write of a run's manifest goes through
// python/fsdp_studio/run_manifest.py — the run's owner, the supervisor, imports it; a SLURM login
// host runs it. The check reads every product source (TypeScript, C++, Python, shell) with its
// comments taken out and lists the files that both name run.json and write a file: the writer
// alone may. Test data (test/) is not product code and is not held to it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const PRODUCT = [
  'core',
  'runs',
  'extension',
  'language-server',
  'webview',
  'cli',
  'bench',
  'bin',
  'native/src',
  'python',
  'scripts',
];
const SOURCE = /\.(ts|mts|mjs|js|cc|cu|cpp|h|cuh|hpp|py|sh)$/;
const THE_WRITER = 'python/fsdp_studio/run_manifest.py';

/** Ways a source file writes a file, in each language the project has. */
const WRITES = [
  /\b(writeFileSync|writeFile|appendFileSync|renameSync|rename|createWriteStream|copyFileSync|writeJsonAtomically|writeHostFile)\s*\(/,
  /\b(write_file_atomically|write_file_in_place|std::ofstream|ofstream)\b/,
  /\bfopen\s*\([^)]*"[wa]/,
  /\bopen\s*\([^)]*["'][wa]b?["']/,
  /\bos\.(replace|rename)\s*\(|(?<!run_manifest)\.write_(bytes|text)\s*\(/,
  /(^|[^<>2&])>\s*"?\$/m, // a shell redirection to a variable's file
];

/**
 * The file's text without comments (line and block comments; Python comments and docstrings) and
 * without the words of messages (one-line string literals holding a space: "could not be recorded in
 * run.json" names the file, it does not write it).
 */
function code(file: string, text: string): string {
  return withoutMessages(withoutComments(file, text));
}

function withoutMessages(text: string): string {
  return text.replace(/(["'`])(?:(?!\1)[^\\\n]|\\.)*\s(?:(?!\1)[^\\\n]|\\.)*\1/g, '""');
}

function withoutComments(file: string, text: string): string {
  if (file.endsWith('.py'))
    return text
      .replace(/("""|''')[\s\S]*?\1/g, '')
      .split('\n')
      .map((l) => l.replace(/(^|\s)#.*$/, ''))
      .join('\n');
  if (file.endsWith('.sh'))
    return text
      .split('\n')
      .map((l) => l.replace(/(^|\s)#.*$/, ''))
      .join('\n');
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:"'`])\/\/.*$/gm, '$1');
}

function sources(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(path.join(root, dir));
  } catch {
    return out;
  }
  for (const name of names) {
    if (name === 'node_modules' || name === '__pycache__' || name === 'build' || name.startsWith('.')) continue;
    const rel = `${dir}/${name}`;
    if (statSync(path.join(root, rel)).isDirectory()) out.push(...sources(rel));
    else if (SOURCE.test(name)) out.push(rel);
  }
  return out;
}

/** Product files that name run.json in their code and write a file. */
function runJsonWriters(): string[] {
  return PRODUCT.flatMap(sources).filter((file) => {
    const text = code(file, readFileSync(path.join(root, file), 'utf8'));
    return /run\.json/.test(text) && WRITES.some((w) => w.test(text));
  });
}

describe('one writer of run.json', () => {
  it('no product file names run.json and writes a file, but python/fsdp_studio/run_manifest.py', () => {
    const writers = runJsonWriters();
    assert.deepEqual(
      writers.filter((f) => f !== THE_WRITER),
      [],
      'write run.json through run_manifest.py (the supervisor imports it; a login host runs it)',
    );
  });

  it('the check finds a writer: the one there is', () => {
    // Can fail: if the scan stopped seeing writes (a broken pattern, a moved file), this says so.
    assert.ok(runJsonWriters().includes(THE_WRITER), `the scan does not see ${THE_WRITER} write run.json`);
  });
});

// One writer of metrics.jsonl under a run's owner (issue 41 item 1): the owner merges every other
// writer's file into it (python/fsdp_studio/event_merge.py). The two writers started without an
// owner — the runtime by hand (native/src/train/run_folder.cc event_log_path), the companion with
// fsdp_studio.init(run_dir=…) (event_merge.py writer_file, which python/fsdp_studio/_events.py
// asks) — write metrics.jsonl only when no owner merges their folder;
// test/runs/one-stream-writer.test.ts runs both under an owner.
const STREAM_WRITERS = ['native/src/train/run_folder.cc', 'python/fsdp_studio/event_merge.py'];
/** A run folder made up for the watch's benchmark: no runtime, no owner, one writer. */
const MADE_UP_RUNS = ['bench/watch/big-run.ts'];
/** Ways a C++ or Python file opens a file for writing. */
const OPENS_FOR_WRITING = [
  /\b(open_for_writing|open_regular_for_writing)\s*\(/,
  /\bmake_unique<MetricsLog>|\bMetricsLog\s*\(|\bstd::ofstream\b|\bfopen\s*\([^)]*"[wa]/,
  /\bopen\s*\([^)]*["'][wa]b?["']|\bO_APPEND\b/,
  /(^|[^<>2&])>>?\s*"?\$/m,
];
/** A TypeScript or JavaScript call that writes a file named in its arguments as metrics.jsonl. */
const TS_WRITES_STREAM =
  /\b(appendFileSync|appendFile|createWriteStream|writeFileSync|writeFile|openRegularFileForWriting|writeRegularFileSync)\s*\([^;]*metrics\.jsonl/;

/** Product files that name metrics.jsonl in their code and open a file for writing. */
function streamWriters(): string[] {
  return PRODUCT.flatMap(sources).filter((file) => {
    const text = code(file, readFileSync(path.join(root, file), 'utf8'));
    if (/\.(ts|mts|mjs|js)$/.test(file)) return TS_WRITES_STREAM.test(text);
    return /metrics\.jsonl/.test(text) && OPENS_FOR_WRITING.some((w) => w.test(text));
  });
}

describe("one writer of a run's stream, metrics.jsonl, under its owner", () => {
  it('only the owner’s merge and the runtime’s choice of its own file open metrics.jsonl for writing', () => {
    assert.deepEqual(streamWriters().sort(), [...STREAM_WRITERS, ...MADE_UP_RUNS].sort());
  });
});
