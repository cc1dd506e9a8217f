// The import graph of the project's own TypeScript, read from the files themselves with the
// TypeScript parser: for each file, the project files it imports (resolved as the bundler resolves
// them) and the packages it names. An import counts at run time unless it is type-only
// (`import type`, or every name marked `type`), since those vanish from the bundle and cannot
// make a cycle or pull `vscode` into a CLI.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface ImportEdge {
  /** Repository-relative path of the imported file, or the package name for a bare specifier. */
  to: string;
  /** A project file (true) or a package (false). */
  local: boolean;
  /** False for type-only imports. */
  runtime: boolean;
}

export type ImportGraph = Map<string, ImportEdge[]>;

const SKIPPED = new Set(['node_modules', 'dist', 'build', 'build-gpu', '.tools', 'test-output', 'generated']);

/** Every .ts file under the given top-level folders of `root`, with its imports. */
export function readImportGraph(root: string, folders: string[]): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const folder of folders) {
    for (const file of tsFiles(path.join(root, folder))) {
      graph.set(path.relative(root, file), importsOf(root, file));
    }
  }
  return graph;
}

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(full));
    else if (entry.isFile() && /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

function importsOf(root: string, file: string): ImportEdge[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const edges: ImportEdge[] = [];
  const add = (specifier: string, runtime: boolean) => {
    if (specifier.startsWith('.')) {
      const target = resolveLocal(path.dirname(file), specifier);
      if (target) edges.push({ to: path.relative(root, target), local: true, runtime });
    } else {
      edges.push({ to: packageName(specifier), local: false, runtime });
    }
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, !typeOnlyImport(node));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, !node.isTypeOnly);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      add(node.moduleReference.expression.text, !node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0])) {
      const dynamicImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const requireCall = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (dynamicImport || requireCall) add(node.arguments[0].text, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

function typeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import './side-effect'`
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  if (!bindings || ts.isNamespaceImport(bindings)) return false;
  return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

function resolveLocal(fromDir: string, specifier: string): string | undefined {
  const base = path.resolve(fromDir, specifier);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Files reachable from `start` by runtime imports (start included), with the path that reached each. */
export function reachable(graph: ImportGraph, start: string): Map<string, string[]> {
  const seen = new Map<string, string[]>([[start, [start]]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const edge of graph.get(file) ?? []) {
      if (!edge.runtime || !edge.local || seen.has(edge.to)) continue;
      seen.set(edge.to, [...seen.get(file)!, edge.to]);
      queue.push(edge.to);
    }
  }
  return seen;
}

/** Cycles of runtime imports between files: each as the files around it, smallest first. */
export function importCycles(graph: ImportGraph): string[][] {
  // Tarjan's strongly connected components; a component of more than one file is a cycle.
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const strongConnect = (v: string) => {
    indexOf.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const e of graph.get(v) ?? []) {
      if (!e.runtime || !e.local || !graph.has(e.to)) continue;
      if (!indexOf.has(e.to)) {
        strongConnect(e.to);
        low.set(v, Math.min(low.get(v)!, low.get(e.to)!));
      } else if (onStack.has(e.to)) {
        low.set(v, Math.min(low.get(v)!, indexOf.get(e.to)!));
      }
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) strongConnect(v);
  return cycles.sort((a, b) => a.length - b.length);
}
