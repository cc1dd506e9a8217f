// Which Python files are torchtitan 0.3 configurations, read from the text alone (no Python runs):
// a file that imports torchtitan and defines functions annotated `-> Trainer.Config`, as
// torchtitan's config_registry.py files, torchtitan_recipes and a person's own module do. The
// editor puts a memory lens above each such function; what the function returns is read only by
// running it (python/fsdp_studio/torchtitan_configs.py), in a trusted workspace.

export interface ConfigFunction {
  name: string;
  /** 0-based line of its `def`. */
  line: number;
}

const IMPORTS_TORCHTITAN = /^\s*(?:from\s+torchtitan[\w.]*\s+import|import\s+torchtitan)\b/m;
// `def name(` … `) -> Trainer.Config:`, the parameters possibly over several lines, the annotation
// possibly quoted; at the top level only (torchtitan's --config names a module-level function).
const CONFIG_DEF = /^def\s+([A-Za-z_]\w*)\s*\([^)]*\)\s*->\s*["']?(?:[\w.]*\.)?Trainer\.Config["']?\s*:/gm;

export function torchtitanConfigFunctions(text: string): ConfigFunction[] {
  if (!IMPORTS_TORCHTITAN.test(text) || !text.includes('Trainer.Config')) return [];
  const out: ConfigFunction[] = [];
  for (const m of text.matchAll(CONFIG_DEF)) {
    out.push({ name: m[1]!, line: lineOf(text, m.index) });
  }
  return out;
}

function lineOf(text: string, offset: number): number {
  let line = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
