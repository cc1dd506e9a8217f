// Whom the NaN and spike advice speaks to: a native run's config (whose keys a fix can edit), or a
// person's own script run by a launch spec, whose knobs live in their code or their framework's
// config — torchrun/FSDP2 (plain PyTorch), the Hugging Face Trainer, Lightning, DeepSpeed,
// accelerate. A fix edits a file only for a native run; for the others it names the knob to turn.
// Pure: the extension reads the manifest and (on this machine) the script, and passes them here.
import { readCommand, type LauncherKind } from '../config/user-command';

export type TrainingFramework = 'native' | 'hf-trainer' | 'lightning' | 'deepspeed' | 'accelerate' | 'pytorch';

/** A native run config's keys the advice reads (and a fix may change). */
export type NativeAdviceConfig = {
  data?: { train?: string };
  training?: { learning_rate?: number; max_grad_norm?: number; warmup_steps?: number; max_steps?: number };
  mixed_precision?: { param_dtype?: string };
  stability?: { on_nan?: string; on_spike?: string };
};

export type AdviceContext =
  | { framework: 'native'; config: NativeAdviceConfig }
  | {
      framework: Exclude<TrainingFramework, 'native'>;
      launcher: LauncherKind;
      /** The training script as the command names it. */
      script?: string;
      /** The DeepSpeed / accelerate config the run was launched with, as the spec names it. */
      configFile?: string;
      /** Steps the run will take, when known (the highest step seen is not: the run may go on). */
      totalSteps?: number;
    };

/** The context of a native run from its resolved config. */
export function nativeAdvice(config: unknown): AdviceContext {
  return { framework: 'native', config: (config ?? {}) as NativeAdviceConfig };
}

/**
 * The advice context of a run from what its manifest says: kind "command" is a person's own
 * command (config.command is its argument vector), anything else the native runtime.
 * `scriptText` is the training script's source when it could be read (on this machine).
 */
export function adviceContext(kind: string | undefined, config: unknown, scriptText?: string): AdviceContext {
  if (kind !== 'command') return nativeAdvice(config);
  const c = (config ?? {}) as { command?: unknown; config?: unknown };
  const argv =
    Array.isArray(c.command) && c.command.length && c.command.every((w) => typeof w === 'string')
      ? (c.command as string[])
      : ['python3'];
  const cmd = readCommand(argv);
  const configFile = typeof c.config === 'string' ? c.config : cmd.configFile;
  return {
    framework: frameworkOf(cmd.launcher, scriptText),
    launcher: cmd.launcher,
    ...(cmd.script ? { script: cmd.script } : {}),
    ...(configFile ? { configFile } : {}),
  };
}

/**
 * Which framework holds the training loop's knobs: the script's imports say Trainer or Lightning
 * (which own clipping and precision even under accelerate or deepspeed), else the launcher.
 */
export function frameworkOf(launcher: LauncherKind, scriptText?: string): Exclude<TrainingFramework, 'native'> {
  if (scriptText !== undefined) {
    if (
      /^\s*(import\s+(lightning|pytorch_lightning)\b|from\s+(lightning|pytorch_lightning)(\.\S+)?\s+import\b)/m.test(
        scriptText,
      )
    )
      return 'lightning';
    if (
      imports(scriptText, 'transformers(?:\\.\\S+)?', /\b(Trainer|TrainingArguments|Seq2SeqTrainer)\b/) ||
      imports(scriptText, 'trl', /Trainer/)
    )
      return 'hf-trainer';
    if (imports(scriptText, 'accelerate', /\bAccelerator\b/) && launcher !== 'deepspeed') return 'accelerate';
  }
  if (launcher === 'deepspeed') return 'deepspeed';
  if (launcher === 'accelerate') return 'accelerate';
  return 'pytorch';
}

/**
 * Whether a script imports a name from a module: `from transformers import Trainer`, or across lines
 * in parentheses as the Hugging Face examples do (run_clm.py: `from transformers import (\n …\n
 * Trainer,\n TrainingArguments,\n …)`).
 */
function imports(scriptText: string, module: string, name: RegExp): boolean {
  const re = new RegExp(String.raw`^\s*from\s+${module}\s+import\s+(\([^)]*\)|[^\n]*)`, 'gm');
  for (const m of scriptText.matchAll(re)) if (name.test(m[1])) return true;
  return false;
}

/** Words for the framework, for advice text: "your Hugging Face Trainer script". */
export function frameworkName(f: TrainingFramework): string {
  switch (f) {
    case 'native':
      return 'the run config';
    case 'hf-trainer':
      return 'the Hugging Face Trainer';
    case 'lightning':
      return 'Lightning';
    case 'deepspeed':
      return 'DeepSpeed';
    case 'accelerate':
      return 'accelerate';
    default:
      return 'PyTorch';
  }
}

/** Where a framework's config file is named in advice: "ds_config.json" or "your DeepSpeed config". */
function configName(ctx: Extract<AdviceContext, { launcher: LauncherKind }>, fallback: string): string {
  return ctx.configFile ? `\`${ctx.configFile}\`` : fallback;
}

/** How to clip gradients at 1.0 in the run's framework. */
export function clipAdvice(ctx: Exclude<AdviceContext, { framework: 'native' }>): string {
  switch (ctx.framework) {
    case 'hf-trainer':
      return "Pass `max_grad_norm=1.0` to `TrainingArguments` (the Trainer's default; check your script does not set it to 0 or a large value).";
    case 'lightning':
      return 'Pass `gradient_clip_val=1.0` to `lightning.Trainer(...)`.';
    case 'deepspeed':
      return `Set \`"gradient_clipping": 1.0\` in ${configName(ctx, 'your DeepSpeed config')}; DeepSpeed clips inside \`engine.step()\`.`;
    case 'accelerate':
      return 'Call `accelerator.clip_grad_norm_(model.parameters(), 1.0)` after `accelerator.backward(loss)` and before `optimizer.step()` (when `accelerator.sync_gradients`).';
    default:
      return `Call \`torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\` in ${ctx.script ? `\`${ctx.script}\`` : 'your script'} between \`loss.backward()\` and \`optimizer.step()\` (it works on FSDP2's sharded DTensor parameters; with FSDP1 use \`model.clip_grad_norm_(1.0)\`).`;
  }
}

/** Where the learning rate is set in the run's framework. */
export function learningRateAdvice(ctx: Exclude<AdviceContext, { framework: 'native' }>): string {
  switch (ctx.framework) {
    case 'hf-trainer':
      return 'Lower `learning_rate` in `TrainingArguments` (halve it as a first try).';
    case 'lightning':
      return 'Lower the `lr` your `configure_optimizers()` gives the optimizer (halve it as a first try).';
    case 'deepspeed':
      return `Lower \`optimizer.params.lr\` in ${configName(ctx, 'your DeepSpeed config')}, or the \`lr\` of the optimizer your script passes to \`deepspeed.initialize\` (halve it as a first try).`;
    default:
      return `Lower the \`lr\` ${ctx.script ? `\`${ctx.script}\`` : 'your script'} gives its optimizer (halve it as a first try).`;
  }
}

/** How to train in bfloat16 rather than float16 in the run's framework. */
export function bf16Advice(ctx: Exclude<AdviceContext, { framework: 'native' }>): string {
  switch (ctx.framework) {
    case 'hf-trainer':
      return 'If you train with `fp16=True`, use `bf16=True` in `TrainingArguments` instead.';
    case 'lightning':
      return 'If you train with `precision="16-mixed"`, use `precision="bf16-mixed"` instead.';
    case 'deepspeed':
      return `If ${configName(ctx, 'your DeepSpeed config')} enables \`"fp16"\`, enable \`"bf16": {"enabled": true}\` instead.`;
    case 'accelerate':
      return 'If you train with `mixed_precision: fp16`, use `bf16` (in your accelerate config or `--mixed_precision bf16`).';
    default:
      return 'If you train in float16, use `torch.autocast(device_type, dtype=torch.bfloat16)` (FSDP2: `MixedPrecisionPolicy(param_dtype=torch.bfloat16)`) and drop the GradScaler.';
  }
}

/** How to warm the learning rate up in the run's framework. */
export function warmupAdvice(ctx: Exclude<AdviceContext, { framework: 'native' }>): string {
  const how =
    ctx.totalSteps !== undefined
      ? `about ${Math.max(1, Math.round(ctx.totalSteps * 0.05))} steps (5% of ${ctx.totalSteps})`
      : "about 5% of the run's steps";
  switch (ctx.framework) {
    case 'hf-trainer':
      return `Set \`warmup_ratio=0.05\` (or \`warmup_steps\`) in \`TrainingArguments\`: ${how}.`;
    case 'lightning':
      return `Return a warmup scheduler from \`configure_optimizers()\` (e.g. \`torch.optim.lr_scheduler.LinearLR\` with \`start_factor=0.1\`) over ${how}.`;
    case 'deepspeed':
      return `Add a \`"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": …}}\` to ${configName(ctx, 'your DeepSpeed config')}: ${how}.`;
    default:
      return `Wrap the optimizer in a warmup schedule (\`torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=…)\`, or transformers' \`get_linear_schedule_with_warmup\`) over ${how}.`;
  }
}

/**
 * A longer warmup that fits the run: twice the current one; without one, 5% of the run; never more
 * than a fifth of the run's steps when those are known (no 100-step warmup for a 150-step run).
 * Undefined when the warmup is already as long as that allows.
 */
export function suggestedWarmup(current: number, totalSteps: number | undefined): number | undefined {
  if (totalSteps === undefined) return Math.max(2 * current, 100);
  const cap = Math.max(1, Math.floor(totalSteps * 0.2));
  const want = current > 0 ? 2 * current : Math.max(1, Math.round(totalSteps * 0.05));
  const next = Math.min(want, cap);
  return next > current ? next : undefined;
}

/** Whether a spike at `step` is early enough for warmup to be the likely cause. */
export function earlyInRun(step: number, warmup: number, totalSteps: number | undefined): boolean {
  return step <= Math.max(2 * warmup, totalSteps !== undefined ? Math.ceil(totalSteps * 0.2) : 100);
}
