// A launch spec (*.fsdp-launch.yaml): a person's own training command as FSDP Studio launches it.
// Checked as the language server checks every config — the schema, then what the schema cannot
// say (the command's words, the host alias, a remote spec's folder, nproc_per_node where the
// launcher starts its own ranks, files that are not there) — and resolved for the launcher.
import path from 'node:path';
import type { LaunchSpec, SlurmLaunch } from '../generated/launch-spec';
import { readCommand, slurmCommandProblem, splitCommand, type UserCommand } from './user-command';
import { commandWorld } from './command-world';
import { compileMetricsPattern } from './metrics-pattern';
import { directiveProblem } from './sbatch-options';
import { worldSizeMismatch } from './launch-world-size';
import { checkHostAlias } from '../remote/remote-command';
import type { RuleContext } from '../rules/rule';
import launchSpecSchema from '../schemas/launch-spec.schema.json';
import { compileSchema } from './compile-schema';
import { schemaProblems, type ConfigProblem } from './schema-problems';
import type { SchemaNode } from './schema-walk';
import { parseSourceDocument, sourceKindOf, type ConfigPath } from './source-document';

export type { LaunchSpec };
export const launchSpecSchemaNode = launchSpecSchema as SchemaNode;
const validate = compileSchema(launchSpecSchema);

export type PythonSource = 'launch spec' | 'Python extension';

export interface ResolvedLaunchSpec {
  name: string;
  command: UserCommand;
  /** Working folder: absolute on this machine; on an SSH host as written (absolute or ~/…). */
  cwd: string;
  env: Record<string, string>;
  /** "local" or the SSH host alias. */
  target: string;
  /** Ranks FSDP Studio itself starts (a plain python command); 1 for launchers that start their own. */
  nproc: number;
  /** Ranks of the whole command, when known. */
  worldSize?: number;
  /** What decides the ranks where the command does not say (deepspeed without --num_gpus: "all GPUs of the host"). */
  worldDecidedBy?: string;
  /** The Python that runs the supervisor; when chosen (pythonSource), also a bare `python`/`python3` first word of the command, its folder first on the command's PATH. */
  python: string;
  /** Who chose `python`: the spec's python: key, or the Python extension's interpreter for the workspace; absent: the default python3 on the target's PATH. */
  pythonSource?: PythonSource;
  /** The TensorBoard folder, on the target (relative to cwd joined to it). */
  tensorboard?: string;
  /** The launch spec's own patterns for the metrics the command prints (metrics.pattern). */
  metricsPatterns?: string[];
  /** The DeepSpeed or accelerate config named for the memory estimate, on this machine. */
  config?: string;
  /** Where run folders go on this machine. */
  runsDir: string;
  /** A SLURM job on `nnodes` nodes, submitted from the login host `target` (runs/slurm/slurm-ranks.ts). */
  slurm?: SlurmLaunch;
  nnodes: number;
}

/** The spec's problems: schema first, then the rules below. */
export function checkLaunchSpec(ctx: RuleContext): ConfigProblem[] {
  const problems = schemaProblems(validate, ctx.doc, { tool: 'FSDP Studio' });
  if (problems.some((p) => p.severity === 'error')) return problems;
  const spec = ctx.value as unknown as LaunchSpec;
  const at = (p: ConfigPath, severity: ConfigProblem['severity'], code: string, message: string): ConfigProblem => ({
    severity,
    path: p,
    code,
    message,
    range: ctx.doc.rangeOf(p, 'value'),
  });
  const words = commandWords(spec.command);
  if ('error' in words) return [...problems, at(['command'], 'error', 'launch.command', `command: ${words.error}`)];
  const command = readCommand(words.argv);
  const target = spec.target ?? 'local';
  if (target !== 'local') {
    const bad = checkHostAlias(target);
    if (bad) problems.push(at(['target'], 'error', 'launch.target', `target: ${bad}`));
    if (!spec.cwd)
      problems.push(
        at(
          ['target'],
          'error',
          'launch.remote-cwd',
          `target ${target}: give cwd, the folder on ${target} that holds your code (absolute, or ~/…); it is not copied there`,
        ),
      );
    else if (!spec.cwd.startsWith('/') && !spec.cwd.startsWith('~'))
      problems.push(
        at(
          ['cwd'],
          'error',
          'launch.remote-cwd',
          `cwd: on ${target} give an absolute folder (or ~/…), not one relative to this machine's spec`,
        ),
      );
  }
  const onSlurm = spec.slurm && slurmCommandProblem(command.launcher);
  if (onSlurm) problems.push(at(['command'], 'error', 'launch.slurm-command', `command: ${onSlurm}`));
  // The same extra #SBATCH lines as a run config's (core/rules/run-config/cluster.ts).
  for (const [i, line] of (spec.slurm?.extra_directives ?? []).entries()) {
    const problem = directiveProblem(line);
    if (problem)
      problems.push(at(['slurm', 'extra_directives', i], problem.severity, 'run.slurm-directive', problem.message));
  }
  if ((spec.nproc_per_node ?? 1) > 1 && command.launcher !== 'python') {
    problems.push(
      at(
        ['nproc_per_node'],
        'warning',
        'launch.nproc',
        `nproc_per_node applies to a plain python command; ${command.argv[0]} starts its own ranks (set them in its options)`,
      ),
    );
  }
  const dir = path.dirname(ctx.fileName);
  if (target === 'local' && ctx.env.readFile) {
    const cwd = path.resolve(dir, spec.cwd ?? '.');
    if (command.script && ctx.env.readFile(path.resolve(cwd, command.script)) === undefined) {
      problems.push(
        at(
          ['command'],
          'warning',
          'launch.script',
          `command: ${command.script} is not in ${path.relative(dir, cwd) || '.'} (the command runs in cwd)`,
        ),
      );
    }
  }
  const patterns = spec.metrics?.pattern;
  for (const [i, pattern] of (typeof patterns === 'string' ? [patterns] : (patterns ?? [])).entries()) {
    const compiled = compileMetricsPattern(pattern);
    if (typeof compiled === 'string') {
      const where: ConfigPath = typeof patterns === 'string' ? ['metrics', 'pattern'] : ['metrics', 'pattern', i];
      problems.push(at(where, 'error', 'launch.metrics-pattern', `${where.join('.')}: ${compiled}`));
    }
  }
  if (target === 'local' && ctx.env.readFile) {
    // The ranks the command starts against those its DeepSpeed/accelerate config implies: refused at launch.
    const configFile = spec.config
      ? path.resolve(dir, spec.config)
      : command.configFile
        ? path.resolve(dir, spec.cwd ?? '.', command.configFile)
        : undefined;
    const nproc = command.launcher === 'python' ? (spec.nproc_per_node ?? 1) : 1;
    const world = commandWorld(command, {
      nproc,
      env: stringEnv(spec.env),
      cwd: path.resolve(dir, spec.cwd ?? '.'),
      readFile: ctx.env.readFile,
    });
    const mismatch = worldSizeMismatch(configFile, world.size, command.launcher, ctx.env.readFile);
    if (mismatch) {
      const where: ConfigPath =
        command.launcher === 'python' && spec.nproc_per_node !== undefined ? ['nproc_per_node'] : ['command'];
      problems.push(at(where, 'error', 'launch.world-size', mismatch));
    }
  }
  if (spec.config && ctx.env.readFile && ctx.env.readFile(path.resolve(dir, spec.config)) === undefined) {
    problems.push(
      at(['config'], 'warning', 'launch.config', `config: ${spec.config} is not there; the memory estimate needs it`),
    );
  }
  return problems;
}

/** The spec resolved for launching, or the problems that stop it. */
export function loadLaunchSpec(
  text: string,
  file: string,
  readFile?: (p: string) => string | undefined,
): { spec?: ResolvedLaunchSpec; problems: ConfigProblem[] } {
  const doc = parseSourceDocument(text, sourceKindOf(file));
  const syntax: ConfigProblem[] = doc.syntaxErrors.map((e) => ({
    severity: e.severity ?? 'error',
    path: [],
    code: 'syntax',
    message: e.message,
    range: e.range,
  }));
  if (syntax.some((p) => p.severity === 'error')) return { problems: syntax };
  if (typeof doc.value !== 'object' || doc.value === null || Array.isArray(doc.value)) {
    return {
      problems: [
        {
          severity: 'error',
          path: [],
          code: 'schema.type',
          message: 'a launch spec must be a mapping with a command',
          range: doc.rangeOf([]),
        },
      ],
    };
  }
  const problems = [
    ...syntax,
    ...checkLaunchSpec({
      doc,
      value: doc.value as Record<string, unknown>,
      fileName: file,
      env: { settings: { deepspeedLaunchedWith: 'unknown' }, ...(readFile ? { readFile } : {}) },
    }),
  ];
  if (problems.some((p) => p.severity === 'error')) return { problems };
  const spec = doc.value as LaunchSpec;
  const words = commandWords(spec.command) as { argv: string[] };
  const command = readCommand(words.argv);
  const dir = path.dirname(file);
  const target = spec.target ?? 'local';
  const cwd = target === 'local' ? path.resolve(dir, spec.cwd ?? '.') : spec.cwd!;
  const nproc = command.launcher === 'python' ? (spec.nproc_per_node ?? 1) : 1;
  const env = stringEnv(spec.env);
  // The machine's files (a hostfile) are read only where the command runs on this one.
  const world = commandWorld(command, { nproc, env, cwd, ...(target === 'local' && readFile ? { readFile } : {}) });
  const tb = spec.logs?.tensorboard;
  return {
    problems,
    spec: {
      name: spec.name ?? path.basename(file).replace(/\.fsdp-launch\.ya?ml$|\.ya?ml$/, ''),
      command,
      cwd,
      env,
      target,
      nproc,
      ...(world.size !== undefined ? { worldSize: world.size } : { worldDecidedBy: world.decidedBy }),
      // A relative path (with a slash) on this machine is relative to cwd, as the command's script is.
      python:
        spec.python && target === 'local' && spec.python.includes('/') && !spec.python.startsWith('~')
          ? path.resolve(cwd, spec.python)
          : (spec.python ?? 'python3'),
      ...(spec.python ? { pythonSource: 'launch spec' as const } : {}),
      ...(tb
        ? {
            tensorboard:
              tb.startsWith('/') || tb.startsWith('~')
                ? tb
                : target === 'local'
                  ? path.resolve(cwd, tb)
                  : `${cwd.replace(/\/+$/, '')}/${tb}`,
          }
        : {}),
      ...(spec.metrics?.pattern
        ? {
            metricsPatterns:
              typeof spec.metrics.pattern === 'string' ? [spec.metrics.pattern] : [...spec.metrics.pattern],
          }
        : {}),
      ...(spec.config ? { config: path.resolve(dir, spec.config) } : {}),
      runsDir: path.resolve(dir, spec.runs_dir ?? 'runs'),
      ...(spec.slurm ? { slurm: spec.slurm } : {}),
      nnodes: spec.nnodes ?? 1,
    },
  };
}

/**
 * The spec with the interpreter the Python extension has selected for the workspace, when the spec
 * names none itself and the command runs on this machine (the selection is a path here).
 */
export function withSelectedPython(spec: ResolvedLaunchSpec, selected: string | undefined): ResolvedLaunchSpec {
  if (!selected || spec.pythonSource || spec.target !== 'local' || spec.slurm) return spec;
  return { ...spec, python: selected, pythonSource: 'Python extension' };
}

function commandWords(command: LaunchSpec['command']): { argv: string[] } | { error: string } {
  if (Array.isArray(command))
    return command.length && command[0] ? { argv: [...command] } : { error: 'the command is empty' };
  return splitCommand(command);
}

/** The spec's env as the command gets it: every value a string. */
function stringEnv(env: LaunchSpec['env']): Record<string, string> {
  return Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, String(v)]));
}
